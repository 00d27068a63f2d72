package dev.idempotency.samples.payments;

import java.util.Comparator;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.context.i18n.LocaleContextHolder;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

/**
 * Every error of the API is an RFC 9457 problem, those of the {@code Idempotency-Key}
 * protocol included; an invalid body lists what is wrong with it in {@code errors}.
 */
@RestControllerAdvice
class ApiProblems extends ResponseEntityExceptionHandler {

	@Override
	protected @Nullable ResponseEntity<Object> handleMethodArgumentNotValid(MethodArgumentNotValidException ex,
			HttpHeaders headers, HttpStatusCode status, WebRequest request) {
		ProblemDetail problem = ex.updateAndGetBody(getMessageSource(), LocaleContextHolder.getLocale());
		problem.setDetail("The request is invalid; nothing was done.");
		List<InvalidField> errors = ex.getFieldErrors()
			.stream()
			.map((error) -> new InvalidField(error.getField(), String.valueOf(error.getDefaultMessage())))
			.sorted(Comparator.comparing(InvalidField::field).thenComparing(InvalidField::message))
			.toList();
		problem.setProperty("errors", errors);
		return handleExceptionInternal(ex, problem, headers, status, request);
	}

	/**
	 * One thing wrong with a request body.
	 *
	 * @param field the field
	 * @param message what is wrong with it
	 */
	record InvalidField(String field, String message) {
	}

}
