package dev.idempotency.web;

import java.io.IOException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.context.ApplicationContext;
import org.springframework.core.MethodParameter;
import org.springframework.core.annotation.AnnotationAwareOrderComparator;
import org.springframework.http.converter.HttpMessageConverters;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.util.ReflectionUtils;
import org.springframework.web.ErrorResponse;
import org.springframework.web.accept.ContentNegotiationManager;
import org.springframework.web.context.request.ServletWebRequest;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.method.support.ModelAndViewContainer;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.handler.HandlerExceptionResolverComposite;
import org.springframework.web.servlet.mvc.method.annotation.HttpEntityMethodProcessor;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerAdapter;
import org.springframework.web.servlet.mvc.support.DefaultHandlerExceptionResolver;
import org.springframework.web.util.ContentCachingResponseWrapper;

/**
 * Renders RFC 9457 problem details the way Spring MVC renders an exception of a handler:
 * a {@link IdempotencyProblem} goes to the application's
 * {@link HandlerExceptionResolver}s with the {@code @Idempotent} handler method, as the
 * {@code DispatcherServlet} would hand it over had the method thrown it, so that the
 * application's {@code @ExceptionHandler}s (of the controller or of a
 * {@code @ControllerAdvice}, a {@code ResponseEntityExceptionHandler} among them) answer
 * it. When none writes a body, the problem is written as a
 * {@code ResponseEntity<ProblemDetail>} with the message converters, content negotiation
 * and {@link ErrorResponse.Interceptor}s of the application's
 * {@link RequestMappingHandlerAdapter}.
 */
final class Problems {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	/** What the written problem is declared as: a handler's return type. */
	private static final MethodParameter RETURN_TYPE = returnType();

	private final List<HandlerExceptionResolver> resolvers;

	private final HttpEntityMethodProcessor writer;

	Problems(List<HandlerExceptionResolver> resolvers, List<HttpMessageConverter<?>> converters,
			ContentNegotiationManager contentNegotiation, List<ErrorResponse.Interceptor> interceptors) {
		this.resolvers = List.copyOf(resolvers);
		this.writer = new HttpEntityMethodProcessor(converters, contentNegotiation, List.of(), interceptors);
	}

	/**
	 * The problems of an application context: its exception resolvers, and the converters
	 * of its Spring MVC; Spring's defaults without a context.
	 */
	static Problems of(@Nullable ApplicationContext context) {
		if (context == null) {
			return new Problems(List.of(), defaultConverters(), new ContentNegotiationManager(), List.of());
		}
		List<HandlerExceptionResolver> found = new ArrayList<>(
				BeanFactoryUtils.beansOfTypeIncludingAncestors(context, HandlerExceptionResolver.class, true, false)
					.values());
		AnnotationAwareOrderComparator.sort(found);
		List<HandlerExceptionResolver> resolvers = new ArrayList<>();
		found.forEach((resolver) -> addResolver(resolvers, resolver));
		RequestMappingHandlerAdapter adapter = context.getBeanProvider(RequestMappingHandlerAdapter.class)
			.orderedStream()
			.findFirst()
			.orElse(null);
		return new Problems(resolvers, (adapter != null) ? adapter.getMessageConverters() : defaultConverters(),
				context.getBeanProvider(ContentNegotiationManager.class).getIfUnique(ContentNegotiationManager::new),
				(adapter != null) ? adapter.getErrorResponseInterceptors() : List.of());
	}

	/**
	 * Spring's {@link DefaultHandlerExceptionResolver} is left out: it would only send
	 * the status, with a warning in the log, for the container's error page to render it
	 * without the problem's {@code type}. The library's own rendering takes its place.
	 */
	private static void addResolver(List<HandlerExceptionResolver> resolvers, HandlerExceptionResolver resolver) {
		if (resolver instanceof HandlerExceptionResolverComposite composite) {
			composite.getExceptionResolvers().forEach((each) -> addResolver(resolvers, each));
		}
		else if (!(resolver instanceof DefaultHandlerExceptionResolver)) {
			resolvers.add(resolver);
		}
	}

	private static List<HttpMessageConverter<?>> defaultConverters() {
		List<HttpMessageConverter<?>> converters = new ArrayList<>();
		HttpMessageConverters.forServer().registerDefaults().build().forEach(converters::add);
		return converters;
	}

	/**
	 * Answer a request with a problem instead of running its handler, or instead of the
	 * response the handler produced.
	 * @param match the {@code @Idempotent} handler the problem is resolved for
	 */
	void send(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			IdempotencyProblem problem) throws IOException {
		if (!response.isCommitted()) {
			response.reset();
		}
		// Held whole and sent with its Content-Length, so that a client still sending a
		// body that is never read (413) has the complete answer before the connection
		// closes.
		ContentCachingResponseWrapper answer = new ContentCachingResponseWrapper(response);
		if (match.applyCors(request, answer)) {
			// As in the DispatcherServlet: an error may have another content type than
			// the
			// handler produces.
			request.removeAttribute(HandlerMapping.PRODUCIBLE_MEDIA_TYPES_ATTRIBUTE);
			if (!resolve(request, answer, match.handler(), problem)) {
				answer.reset();
				match.applyCors(request, answer);
				write(request, answer,
						new ResponseEntity<>(problem.getBody(), problem.getHeaders(), problem.getStatusCode()));
			}
		}
		answer.copyBodyToResponse();
		response.flushBuffer();
	}

	/**
	 * Offer the problem to the application's exception resolvers, in their order.
	 * @return whether one of them wrote the answer
	 */
	private boolean resolve(HttpServletRequest request, HttpServletResponse response, HandlerMethod handler,
			IdempotencyProblem problem) {
		for (HandlerExceptionResolver resolver : this.resolvers) {
			ErrorRecorder recorder = new ErrorRecorder(response);
			ModelAndView result;
			try {
				result = resolver.resolveException(request, recorder, handler, problem);
			}
			catch (RuntimeException ex) {
				log.warn("Exception resolver " + resolver + " failed to render " + problem.getBody().getType()
						+ "; the library renders it", ex);
				return false;
			}
			if (result != null) {
				// A view, or only a status: the library writes the problem itself.
				return result.isEmpty() && !recorder.errorSent;
			}
		}
		return false;
	}

	/**
	 * Write a problem with the application's message converters, as Spring MVC writes the
	 * {@code ResponseEntity<ProblemDetail>} that a handler returns.
	 */
	void write(HttpServletRequest request, HttpServletResponse response, ResponseEntity<ProblemDetail> problem)
			throws IOException {
		try {
			this.writer.handleReturnValue(problem, RETURN_TYPE, new ModelAndViewContainer(),
					new ServletWebRequest(request, response));
		}
		catch (IOException ex) {
			throw ex;
		}
		catch (Exception ex) {
			// No converter writes a problem: the status and the headers still tell it.
			log.warn("Could not write problem " + problem.getBody() + "; answering with its status only", ex);
			if (!response.isCommitted()) {
				response.reset();
				response.setStatus(problem.getStatusCode().value());
				problem.getHeaders()
					.forEach((name, values) -> values.forEach((value) -> response.addHeader(name, value)));
			}
		}
	}

	private static MethodParameter returnType() {
		Method method = ReflectionUtils.findMethod(Problems.class, "problem");
		if (method == null) {
			throw new IllegalStateException("Problems#problem not found");
		}
		return new MethodParameter(method, -1);
	}

	/**
	 * The declared type of the problems written, as if a handler returned them.
	 */
	@SuppressWarnings("unused")
	private static @Nullable ResponseEntity<ProblemDetail> problem() {
		return null;
	}

	/**
	 * Keeps a resolver that only sends an error status from committing the response.
	 */
	private static final class ErrorRecorder extends HttpServletResponseWrapper {

		private boolean errorSent;

		ErrorRecorder(HttpServletResponse response) {
			super(response);
		}

		@Override
		public void sendError(int sc, @Nullable String msg) {
			this.errorSent = true;
		}

		@Override
		public void sendError(int sc) {
			this.errorSent = true;
		}

	}

}
