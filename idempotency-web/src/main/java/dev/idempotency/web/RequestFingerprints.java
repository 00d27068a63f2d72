package dev.idempotency.web;

import dev.idempotency.core.internal.Sha256;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
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

	/**
	 * The charsets in which Spring MVC hands a JSON body to Jackson as bytes, for it to
	 * detect their Unicode encoding.
	 */
	private static final Set<String> READ_AS_BYTES = Set.of("UTF-8", "UTF-16", "UTF-16BE", "UTF-16LE", "UTF-32",
			"UTF-32BE", "UTF-32LE", "US-ASCII");

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
		String contentType = request.getContentType();
		byte[] content = (body != null) ? asRead(contentType, body) : parsedBody(request);
		return RequestFingerprint.of(request.getMethod(), route, contentType, content, endpoint.fingerprintFields());
	}

	/**
	 * The body as the handler reads it. Spring MVC hands a JSON body to Jackson as bytes,
	 * to be read in the Unicode encoding they are in, unless its {@code charset} names
	 * another, in which it decodes the body first; the fingerprint counts JSON by its
	 * text, so such a body counts as that text in UTF-8. The same bytes read in two
	 * charsets are two requests; the same text in two charsets is one.
	 */
	private static byte[] asRead(@Nullable String contentType, byte[] body) {
		if (contentType == null) {
			return body;
		}
		MediaType type;
		try {
			type = MediaType.parseMediaType(contentType);
		}
		catch (InvalidMediaTypeException ex) {
			return body;
		}
		Charset charset = type.getCharset();
		boolean json = type.getSubtype().equals("json") || type.getSubtype().endsWith("+json");
		if (!json || charset == null || READ_AS_BYTES.contains(charset.name())) {
			return body;
		}
		return new String(body, charset).getBytes(StandardCharsets.UTF_8);
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
	 * {@code FormContentFilter} forms sent with PUT and PATCH), so the body stream cannot
	 * be taken from it: the fingerprint covers the parsed parameters of a form, and the
	 * bytes of every part of a multipart body (the query is part of the route). A part
	 * counts by its name, file name, content type, size and the SHA-256 of its bytes,
	 * read from the container's copy through a small buffer, so that no upload is ever
	 * held in memory here.
	 */
	private static byte[] parsedBody(HttpServletRequest request) throws IOException, ServletException {
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		if (!RequestBodies.isMultipart(request.getContentType())) {
			new TreeMap<>(request.getParameterMap()).forEach((name, values) -> {
				for (String value : values) {
					out.writeBytes((encode(name) + "=" + encode(value) + "&").getBytes(StandardCharsets.US_ASCII));
				}
			});
			return out.toByteArray();
		}
		List<Part> parts = new ArrayList<>(request.getParts());
		parts.sort(Comparator.comparing(Part::getName));
		for (Part part : parts) {
			String fileName = (part.getSubmittedFileName() != null) ? part.getSubmittedFileName() : "";
			String partType = (part.getContentType() != null) ? part.getContentType() : "";
			out.writeBytes(("\n" + encode(part.getName()) + ";" + encode(fileName) + ";" + encode(partType) + ";"
					+ part.getSize() + ";" + digest(part) + "\n")
				.getBytes(StandardCharsets.US_ASCII));
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
		MessageDigest sha256 = Sha256.digest();
		try (InputStream in = new DigestInputStream(part.getInputStream(), sha256)) {
			in.transferTo(OutputStream.nullOutputStream());
		}
		return HexFormat.of().formatHex(sha256.digest());
	}

	private static String encode(String value) {
		return URLEncoder.encode(value, StandardCharsets.UTF_8);
	}

}
