package dev.idempotency.web;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;

import dev.idempotency.core.RequestFingerprint;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.Part;
import org.jspecify.annotations.Nullable;

import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.util.StringUtils;

/**
 * Computes the fingerprint of an {@code @Idempotent} request from what identifies it:
 * method, route, media type and body (see {@link RequestFingerprint}).
 */
final class RequestFingerprints {

	private RequestFingerprints() {
	}

	/**
	 * Compute the fingerprint of a request.
	 * @param request the request
	 * @param pattern the pattern of the handler's mapping
	 * @param endpoint the handler
	 * @param body the body as read, or {@code null} for a form or multipart body that the
	 * container parsed
	 * @throws dev.idempotency.core.FingerprintLimitExceededException when a JSON body is
	 * beyond the limits of its canonical form
	 */
	static String of(HttpServletRequest request, String pattern, IdempotentEndpoint endpoint, byte @Nullable [] body)
			throws IOException, ServletException {
		// The concrete path and query tell apart /orders/1/pay and /orders/2/pay, which
		// share a pattern; the pattern tells apart handlers that share a path.
		String route = pattern + " " + request.getRequestURI() + canonicalQuery(request.getQueryString());
		byte[] content = (body != null) ? body : formBody(request);
		return RequestFingerprint.of(request.getMethod(), route, request.getContentType(), content,
				endpoint.fingerprintFields());
	}

	/**
	 * Why the {@code Content-Type} of a request is no media type, if it is not. The
	 * fingerprint counts the media type, and Spring MVC reads it again for the handler: a
	 * header that does not parse, names an unknown charset, or is a wildcard (which only
	 * {@code Accept} may carry) makes Spring MVC answer 415, or fail with a 500 (a
	 * wildcard), which a client retries without end. Such a request is refused before its
	 * key is claimed.
	 * @param contentType the header, or {@code null} when there is none
	 * @return what is wrong with it, or {@code null} when it is a media type or absent
	 */
	static @Nullable String contentTypeProblem(@Nullable String contentType) {
		if (!StringUtils.hasLength(contentType)) {
			return null;
		}
		MediaType type;
		try {
			type = MediaType.parseMediaType(contentType);
		}
		catch (InvalidMediaTypeException ex) {
			return ex.getMessage();
		}
		return type.isConcrete() ? null : "a Content-Type cannot be a wildcard";
	}

	/**
	 * The container parses form and multipart bodies itself (and Spring's
	 * {@code FormContentFilter} those of PUT and PATCH), so the body stream cannot be
	 * taken from it: the fingerprint covers the parsed parameters and parts instead. An
	 * uploaded file counts by its SHA-256, read from the container's copy through a small
	 * buffer, so that no file is ever held in memory here.
	 */
	private static byte[] formBody(HttpServletRequest request) throws IOException, ServletException {
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		new TreeMap<>(request.getParameterMap()).forEach((name, values) -> {
			for (String value : values) {
				out.writeBytes((encode(name) + "=" + encode(value) + "&").getBytes(StandardCharsets.US_ASCII));
			}
		});
		String contentType = request.getContentType();
		if (contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith("multipart/")) {
			List<Part> parts = new ArrayList<>(request.getParts());
			parts.sort(Comparator.comparing(Part::getName));
			for (Part part : parts) {
				if (part.getSubmittedFileName() == null) {
					continue;
				}
				String partType = (part.getContentType() != null) ? part.getContentType() : "";
				out.writeBytes(("\n" + encode(part.getName()) + ";" + encode(part.getSubmittedFileName()) + ";"
						+ encode(partType) + ";" + part.getSize() + ";" + digest(part) + "\n")
					.getBytes(StandardCharsets.US_ASCII));
			}
		}
		return out.toByteArray();
	}

	/**
	 * The query as the parameters it carries, the way the container and Spring MVC read
	 * it: decoded (as UTF-8, {@code +} and {@code %20} both a space), sorted by name, the
	 * values of one name in the order sent, and written again in one encoding, so that a
	 * retry that orders or encodes its query differently is the same request. A query
	 * that does not decode counts as it was sent.
	 */
	static String canonicalQuery(@Nullable String query) {
		if (query == null || query.isEmpty()) {
			return "";
		}
		List<String[]> parameters = new ArrayList<>();
		for (String pair : query.split("&")) {
			if (pair.isEmpty()) {
				continue;
			}
			int equals = pair.indexOf('=');
			String name = decode((equals >= 0) ? pair.substring(0, equals) : pair);
			String value = decode((equals >= 0) ? pair.substring(equals + 1) : "");
			if (name == null || value == null) {
				// A space never occurs in a query as sent, nor in one written again.
				return "? " + query;
			}
			parameters.add(new String[] { name, value });
		}
		parameters.sort(Comparator.comparing((parameter) -> parameter[0]));
		StringBuilder canonical = new StringBuilder();
		for (String[] parameter : parameters) {
			canonical.append((canonical.length() == 0) ? '?' : '&')
				.append(encode(parameter[0]))
				.append('=')
				.append(encode(parameter[1]));
		}
		return canonical.toString();
	}

	private static @Nullable String decode(String encoded) {
		ByteArrayOutputStream bytes = new ByteArrayOutputStream(encoded.length());
		int plain = 0;
		for (int i = 0; i <= encoded.length(); i++) {
			char c = (i < encoded.length()) ? encoded.charAt(i) : '%';
			if (c != '%' && c != '+') {
				continue;
			}
			bytes.writeBytes(encoded.substring(plain, i).getBytes(StandardCharsets.UTF_8));
			if (i == encoded.length()) {
				break;
			}
			if (c == '+') {
				bytes.write(' ');
			}
			else {
				int high = (i + 2 < encoded.length()) ? Character.digit(encoded.charAt(i + 1), 16) : -1;
				int low = (i + 2 < encoded.length()) ? Character.digit(encoded.charAt(i + 2), 16) : -1;
				if (high < 0 || low < 0) {
					return null;
				}
				bytes.write(high * 16 + low);
				i += 2;
			}
			plain = i + 1;
		}
		try {
			return StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT)
				.decode(ByteBuffer.wrap(bytes.toByteArray()))
				.toString();
		}
		catch (CharacterCodingException ex) {
			return null;
		}
	}

	private static String digest(Part part) throws IOException {
		MessageDigest sha256;
		try {
			sha256 = MessageDigest.getInstance("SHA-256");
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
		try (InputStream in = new DigestInputStream(part.getInputStream(), sha256)) {
			in.transferTo(OutputStream.nullOutputStream());
		}
		return HexFormat.of().formatHex(sha256.digest());
	}

	private static String encode(String value) {
		return URLEncoder.encode(value, StandardCharsets.UTF_8);
	}

}
