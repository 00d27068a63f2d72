package dev.idempotency.web;

import java.io.IOException;
import java.io.InputStream;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;

import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;

/**
 * Reads the body of an {@code @Idempotent} request once, for its fingerprint and then for
 * the handler, never more than the limit: a body announced larger is not read at all, and
 * a body sent in chunks is read no further than one byte past the limit.
 * <p>
 * What the servlet container parses itself is left to it: multipart bodies, whose parts
 * the fingerprint reads from the container's copy, and forms, for the methods and the
 * exact media type the container (or Spring's {@code FormContentFilter}) parses them for.
 * Whatever else a body is, its bytes are read, whatever its media type starts like.
 */
final class RequestBodies {

	private static final MediaType MULTIPART = MediaType.parseMediaType("multipart/*");

	private RequestBodies() {
	}

	/**
	 * Whether a body is multipart, which the container parses into parts.
	 */
	static boolean isMultipart(@Nullable String contentType) {
		MediaType type = mediaType(contentType);
		return type != null && MULTIPART.includes(type);
	}

	/**
	 * Whether a body is a form, which the container parses into parameters for some
	 * methods.
	 */
	static boolean isForm(@Nullable String contentType) {
		MediaType type = mediaType(contentType);
		return type != null && MediaType.APPLICATION_FORM_URLENCODED.equalsTypeAndSubtype(type);
	}

	/**
	 * Read what the container did not parse of the body: all of it, unless it is a form
	 * that the container parsed, of which nothing is left.
	 * @param request the request
	 * @param limit the largest body in bytes
	 * @return the body, or {@code null} when it is larger than the limit
	 */
	static byte @Nullable [] readUnparsed(HttpServletRequest request, int limit) throws IOException {
		if (isForm(request.getContentType())) {
			// Parsed now if the container parses it; what is left is what it did not.
			request.getParameterMap();
			return read(request.getInputStream(), -1, limit);
		}
		return read(request.getInputStream(), request.getContentLengthLong(), limit);
	}

	private static byte @Nullable [] read(InputStream in, long announced, int limit) throws IOException {
		if (announced > limit) {
			return null;
		}
		byte[] body = (announced >= 0) ? in.readNBytes((int) announced) : in.readNBytes(limit);
		if (body.length == limit && in.read() != -1) {
			return null;
		}
		return body;
	}

	private static @Nullable MediaType mediaType(@Nullable String contentType) {
		if (contentType == null || contentType.isBlank()) {
			return null;
		}
		try {
			return MediaType.parseMediaType(contentType);
		}
		catch (InvalidMediaTypeException ex) {
			return null;
		}
	}

}
