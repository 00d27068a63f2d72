package dev.idempotency.core;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
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
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.util.Assert;

/**
 * The fingerprint of a request: SHA-256 over its method, its route and its body, so that
 * the same key sent with a different request can be told apart from a retry.
 * <p>
 * A JSON body is taken in canonical form: parsed and written again with object members
 * sorted by name, no insignificant whitespace, and numbers compared by value. Two bodies
 * that differ only in member order or formatting have the same fingerprint. Other media
 * types are hashed as they are.
 */
public final class RequestFingerprint {

	private static final JsonMapper mapper = JsonMapper.builder()
		.enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
		.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
		.build();

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
	 */
	public static String of(String method, String route, @Nullable String contentType, byte[] body,
			Collection<String> fields) {
		Assert.hasText(method, "method must not be empty");
		Assert.notNull(route, "route must not be null");
		Assert.notNull(body, "body must not be null");
		Assert.notNull(fields, "fields must not be null");
		MessageDigest sha256 = IdempotencyKeys.digest("SHA-256");
		sha256.update((method.toUpperCase(Locale.ROOT) + "\n" + route + "\n").getBytes(StandardCharsets.UTF_8));
		sha256.update((body.length > 0 && isJson(contentType)) ? canonicalJson(body, fields) : body);
		return HexFormat.of().formatHex(sha256.digest());
	}

	/**
	 * Return the canonical form of a JSON document: members sorted by name, no
	 * insignificant whitespace, numbers written by value.
	 * @param json the JSON document
	 * @param fields JSON Pointers (or top-level member names) to keep; empty for all
	 * @return the canonical form, UTF-8
	 * @throws IllegalArgumentException when the body is not valid JSON
	 */
	public static byte[] canonicalJson(byte[] json, Collection<String> fields) {
		JsonNode root;
		try {
			root = mapper.readTree(json);
		}
		catch (JacksonException ex) {
			throw new IllegalArgumentException("The request body is not valid JSON", ex);
		}
		JsonNode selected = fields.isEmpty() ? root : select(root, fields);
		ByteArrayOutputStream out = new ByteArrayOutputStream(json.length);
		try (JsonGenerator generator = mapper.createGenerator(out)) {
			write(selected, generator);
		}
		return out.toByteArray();
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
		else if (node.isNumber()) {
			BigDecimal value = node.decimalValue();
			generator.writeNumber((value.signum() == 0) ? "0" : value.stripTrailingZeros().toPlainString());
		}
		else {
			generator.writeTree(node);
		}
	}

	private static boolean isJson(@Nullable String contentType) {
		if (contentType == null) {
			return false;
		}
		String type = contentType.toLowerCase(Locale.ROOT);
		int parameters = type.indexOf(';');
		if (parameters >= 0) {
			type = type.substring(0, parameters);
		}
		type = type.trim();
		return type.equals("application/json") || type.endsWith("+json");
	}

}
