package dev.idempotency.web;

import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;

import org.springframework.http.MediaType;

/**
 * Reads the body of an {@code @Idempotent} request once, for its fingerprint and then for
 * the handler, never more than the limit: a body announced larger is not read at all, and
 * a body sent in chunks is read no further than one byte past the limit.
 */
final class RequestBodies {

	private RequestBodies() {
	}

	/**
	 * Whether the container parses the body of this request itself (forms and multipart),
	 * under its own limits, so that the filter must not read it as a stream.
	 */
	static boolean isParsedByTheContainer(@Nullable String contentType) {
		if (contentType == null) {
			return false;
		}
		String type = contentType.toLowerCase(Locale.ROOT);
		return type.startsWith(MediaType.APPLICATION_FORM_URLENCODED_VALUE) || type.startsWith("multipart/");
	}

	/**
	 * Read the whole body, if it is no larger than the limit.
	 * @param request the request
	 * @param limit the largest body in bytes
	 * @return the body, or {@code null} when it is larger than the limit
	 */
	static byte @Nullable [] read(HttpServletRequest request, int limit) throws IOException {
		long announced = request.getContentLengthLong();
		if (announced > limit) {
			return null;
		}
		InputStream in = request.getInputStream();
		byte[] body = (announced >= 0) ? in.readNBytes((int) announced) : in.readNBytes(limit);
		if (body.length == limit && in.read() != -1) {
			return null;
		}
		return body;
	}

}
