package dev.idempotency.core;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonPointer;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.exc.StreamConstraintsException;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.util.Assert;
import org.springframework.util.MimeType;
import org.springframework.util.MimeTypeUtils;

/**
 * The fingerprint of a request: SHA-256 over its method, its route, its media type and
 * its body, so that the same key sent with a different request can be told apart from a
 * retry.
 * <p>
 * The media type counts by its type and subtype (in lower case), and by its charset
 * except for JSON: {@code text/plain} and {@code application/json} of the same bytes are
 * two requests, {@code application/json} and {@code application/json; charset=UTF-8} are
 * one. Other parameters (such as a multipart boundary) do not count.
 * <p>
 * A JSON body is taken in canonical form: parsed and written again with object members
 * sorted by name, no insignificant whitespace, and numbers by value, written as their
 * significant digits and a power of ten ({@code 1200}, {@code 1200.0} and {@code 12e2}
 * are all {@code 12e2}), so that a number costs the same to compare whatever its
 * exponent. Two bodies that differ only in member order or formatting have the same
 * fingerprint. A JSON body that does not parse, or that repeats a member name in one
 * object, has no canonical form: it is hashed as it is, so only a byte-identical body
 * matches it. A JSON body nested deeper than {@value #MAX_JSON_NESTING_DEPTH} levels, or
 * holding a number longer than {@value #MAX_JSON_NUMBER_LENGTH} characters, is refused
 * with {@link FingerprintLimitExceededException}. Bodies of other media types are hashed
 * as they are.
 *
 * @since 0.1.0
 */
public final class RequestFingerprint {

	/** The deepest nesting of arrays and objects in a JSON body that is fingerprinted. */
	public static final int MAX_JSON_NESTING_DEPTH = 500;

	/** The longest number, in characters, in a JSON body that is fingerprinted. */
	public static final int MAX_JSON_NUMBER_LENGTH = 1000;

	/** The longest member name, in characters, in a JSON body that is fingerprinted. */
	public static final int MAX_JSON_NAME_LENGTH = 50_000;

	private static final JsonMapper mapper = JsonMapper
		.builder(JsonFactory.builder()
			.streamReadConstraints(StreamReadConstraints.builder()
				.maxNestingDepth(MAX_JSON_NESTING_DEPTH)
				.maxNumberLength(MAX_JSON_NUMBER_LENGTH)
				.maxNameLength(MAX_JSON_NAME_LENGTH)
				.maxStringLength(StreamReadConstraints.DEFAULT_MAX_STRING_LEN)
				.build())
			.enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
			.build())
		.enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
		.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
		.build();

	private static final byte[] CANONICAL = "json\n".getBytes(StandardCharsets.US_ASCII);

	private static final byte[] AS_SENT = "bytes\n".getBytes(StandardCharsets.US_ASCII);

	private RequestFingerprint() {
	}

	/**
	 * Compute the fingerprint of a request.
	 * @param method the HTTP method
	 * @param route the route template or path that identifies the operation
	 * @param contentType the media type of the body, if any
	 * @param body the body bytes
	 * @param fields JSON Pointers (or top-level member names) of the only parts of a JSON
	 * body to include; empty for the whole body
	 * @return the fingerprint, 64 hexadecimal characters
	 * @throws FingerprintLimitExceededException when a JSON body is nested too deeply or
	 * holds a number or a name that is too long
	 */
	public static String of(String method, String route, @Nullable String contentType, byte[] body,
			Collection<String> fields) {
		Assert.hasText(method, "method must not be empty");
		Assert.notNull(route, "route must not be null");
		Assert.notNull(body, "body must not be null");
		Assert.notNull(fields, "fields must not be null");
		MessageDigest sha256 = IdempotencyKeys.digest("SHA-256");
		sha256.update((method.toUpperCase(Locale.ROOT) + "\n" + route + "\n" + mediaType(contentType) + "\n")
			.getBytes(StandardCharsets.UTF_8));
		JsonNode canonical = (body.length > 0 && isJson(contentType)) ? selectedOrNull(body, fields) : null;
		if (canonical != null) {
			sha256.update(CANONICAL);
			// The canonical form goes straight into the digest: the same bytes as
			// canonicalJson returns, never held in memory.
			try (JsonGenerator generator = mapper
				.createGenerator(new DigestOutputStream(OutputStream.nullOutputStream(), sha256))) {
				write(canonical, generator);
			}
		}
		else {
			sha256.update(AS_SENT);
			sha256.update(body);
		}
		return HexFormat.of().formatHex(sha256.digest());
	}

	/**
	 * Return the canonical form of a JSON document: members sorted by name, no
	 * insignificant whitespace, numbers as their significant digits and a power of ten.
	 * @param json the JSON document
	 * @param fields JSON Pointers (or top-level member names) to keep; empty for all
	 * @return the canonical form, UTF-8
	 * @throws IllegalArgumentException when the body is not valid JSON, or repeats a
	 * member name in one object
	 * @throws FingerprintLimitExceededException when the body is nested too deeply or
	 * holds a number or a name that is too long
	 */
	public static byte[] canonicalJson(byte[] json, Collection<String> fields) {
		JsonNode selected = selected(json, fields);
		ByteArrayOutputStream out = new ByteArrayOutputStream(json.length);
		try (JsonGenerator generator = mapper.createGenerator(out)) {
			write(selected, generator);
		}
		return out.toByteArray();
	}

	/**
	 * The parsed document, or the chosen parts of it.
	 */
	private static JsonNode selected(byte[] json, Collection<String> fields) {
		JsonNode root;
		try {
			root = mapper.readTree(json);
		}
		catch (StreamConstraintsException ex) {
			throw new FingerprintLimitExceededException("The JSON body is beyond the limits of its fingerprint", ex);
		}
		catch (JacksonException ex) {
			throw new IllegalArgumentException("The request body is not valid JSON, or repeats a member name (a "
					+ "duplicate property) in one object", ex);
		}
		return fields.isEmpty() ? root : select(root, fields);
	}

	/**
	 * The parsed document (or its chosen parts), or {@code null} when it has no canonical
	 * form.
	 */
	private static @Nullable JsonNode selectedOrNull(byte[] json, Collection<String> fields) {
		try {
			return selected(json, fields);
		}
		catch (FingerprintLimitExceededException ex) {
			throw ex;
		}
		catch (IllegalArgumentException ex) {
			return null;
		}
	}

	private static JsonNode select(JsonNode root, Collection<String> fields) {
		Map<String, JsonNode> picked = new TreeMap<>();
		for (String field : fields) {
			String pointer = field.startsWith("/") ? field : "/" + field;
			JsonNode value = root.at(JsonPointer.compile(pointer));
			picked.put(pointer, value.isMissingNode() ? mapper.nullNode() : value);
		}
		return mapper.valueToTree(picked);
	}

	private static void write(JsonNode node, JsonGenerator generator) {
		if (node.isObject()) {
			generator.writeStartObject();
			List<String> names = new ArrayList<>(node.propertyNames());
			names.sort(null);
			for (String name : names) {
				generator.writeName(name);
				write(node.get(name), generator);
			}
			generator.writeEndObject();
		}
		else if (node.isArray()) {
			generator.writeStartArray();
			for (JsonNode element : node) {
				write(element, generator);
			}
			generator.writeEndArray();
		}
		else if (node.isIntegralNumber() && node.canConvertToLong()) {
			generator.writeNumber(number(node.longValue()));
		}
		else if (node.isNumber()) {
			generator.writeNumber(number(node.decimalValue()));
		}
		else {
			generator.writeTree(node);
		}
	}

	/**
	 * The same form as {@link #number(BigDecimal)} for a whole number that fits a
	 * {@code long}, the common case, without going through a {@code BigDecimal}.
	 */
	private static String number(long value) {
		if (value == 0) {
			return "0";
		}
		int exponent = 0;
		while (value % 10 == 0) {
			value /= 10;
			exponent++;
		}
		String digits = Long.toString(value);
		return (exponent != 0) ? digits + "e" + exponent : digits;
	}

	/**
	 * Write a number as its significant digits and a power of ten. Never as plain digits:
	 * {@code 1e999999999} would take a billion of them.
	 */
	private static String number(BigDecimal value) {
		if (value.signum() == 0) {
			return "0";
		}
		BigDecimal stripped;
		try {
			stripped = value.stripTrailingZeros();
		}
		catch (ArithmeticException ex) {
			throw new FingerprintLimitExceededException("A number of the JSON body has an exponent out of range", ex);
		}
		String digits = stripped.unscaledValue().toString();
		long exponent = -(long) stripped.scale();
		return (exponent != 0) ? digits + "e" + exponent : digits;
	}

	private static String mediaType(@Nullable String contentType) {
		if (contentType == null || contentType.isBlank()) {
			return "";
		}
		try {
			MimeType type = MimeTypeUtils.parseMimeType(contentType);
			String essence = type.getType() + "/" + type.getSubtype();
			Charset charset = isJson(type) ? null : type.getCharset();
			return (charset != null) ? essence + ";charset=" + charset.name().toLowerCase(Locale.ROOT) : essence;
		}
		catch (IllegalArgumentException ex) {
			// Not a media type, or an unknown charset: the header as sent.
			return contentType.trim().toLowerCase(Locale.ROOT);
		}
	}

	private static boolean isJson(@Nullable String contentType) {
		if (contentType == null) {
			return false;
		}
		try {
			return isJson(MimeTypeUtils.parseMimeType(contentType));
		}
		catch (IllegalArgumentException ex) {
			return false;
		}
	}

	private static boolean isJson(MimeType type) {
		return (type.getType().equals("application") && type.getSubtype().equals("json"))
				|| type.getSubtype().endsWith("+json");
	}

}
