package dev.idempotency.web;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;

/**
 * Writes RFC 9457 problem details.
 */
final class Problems {

	static final String CONTENT_TYPE = MediaType.APPLICATION_PROBLEM_JSON_VALUE;

	private static final JsonMapper mapper = JsonMapper.builder().build();

	private Problems() {
	}

	static byte[] body(HttpServletRequest request, int status, @Nullable URI type, String title,
			@Nullable String detail) {
		Map<String, Object> problem = new LinkedHashMap<>();
		problem.put("type", (type != null) ? type.toString() : "about:blank");
		problem.put("title", title);
		problem.put("status", status);
		if (detail != null) {
			problem.put("detail", detail);
		}
		problem.put("instance", request.getRequestURI());
		return mapper.writeValueAsBytes(problem);
	}

	static String title(int status) {
		HttpStatus resolved = HttpStatus.resolve(status);
		return (resolved != null) ? resolved.getReasonPhrase() : "Error";
	}

	static void send(HttpServletRequest request, HttpServletResponse response, HttpStatus status, URI type,
			String title, String detail, @Nullable Duration retryAfter) throws IOException {
		if (!response.isCommitted()) {
			response.reset();
		}
		byte[] body = body(request, status.value(), type, title, detail);
		response.setStatus(status.value());
		response.setContentType(CONTENT_TYPE);
		if (retryAfter != null) {
			long seconds = Math.max(1, (retryAfter.toMillis() + 999) / 1000);
			response.setHeader(HttpHeaders.RETRY_AFTER, Long.toString(seconds));
		}
		response.setContentLength(body.length);
		response.getOutputStream().write(body);
		response.flushBuffer();
	}

}
