package dev.idempotency.outbox;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Stores headers as {@code Name: value} lines, readable in {@code psql}. Names and values
 * may not contain line breaks, so the form is unambiguous.
 */
final class HeaderLines {

	private HeaderLines() {
	}

	static void check(String name, String value) {
		Assert.hasText(name, "header name must not be empty");
		Assert.notNull(value, "header value must not be null");
		Assert.isTrue(name.indexOf(':') < 0 && name.indexOf('\n') < 0 && name.indexOf('\r') < 0,
				"header name must not contain ':' or line breaks");
		Assert.isTrue(value.indexOf('\n') < 0 && value.indexOf('\r') < 0, "header value must not contain line breaks");
	}

	static @Nullable String encode(Map<String, String> headers) {
		if (headers.isEmpty()) {
			return null;
		}
		StringBuilder text = new StringBuilder();
		headers.forEach((name, value) -> text.append(name).append(": ").append(value).append('\n'));
		return text.toString();
	}

	static Map<String, String> decode(@Nullable String text) {
		if (text == null || text.isEmpty()) {
			return Collections.emptyMap();
		}
		Map<String, String> headers = new LinkedHashMap<>();
		for (String line : text.split("\n")) {
			int colon = line.indexOf(": ");
			if (colon > 0) {
				headers.put(line.substring(0, colon), line.substring(colon + 2));
			}
		}
		return Collections.unmodifiableMap(headers);
	}

}
