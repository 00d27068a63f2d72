package dev.idempotency.core.jdbc;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.util.Assert;

/**
 * Stores headers as text, one {@code Name: value} line per value, readable in
 * {@code psql}: the replayed headers of the key store and the headers of outbox rows. A
 * name may not be empty nor contain {@code ':'} or a line break, and a value may not
 * contain a line break, so that the form is unambiguous: {@link #encode} refuses headers
 * that break these rules, and {@link #decode} refuses text that is not in that form
 * rather than guess.
 *
 * @since 0.1.0
 */
public final class HeaderCodec {

	private HeaderCodec() {
	}

	/**
	 * Check that a header can be stored.
	 * @param name the name
	 * @param value the value
	 * @throws IllegalArgumentException when the name is empty or contains {@code ':'} or
	 * a line break, or the value contains a line break
	 */
	public static void check(String name, String value) {
		Assert.hasText(name, "header name must not be empty");
		Assert.notNull(value, "header value must not be null");
		Assert.isTrue(name.indexOf(':') < 0 && !hasLineBreak(name), "header name must not contain ':' or line breaks");
		Assert.isTrue(!hasLineBreak(value), "header value must not contain line breaks");
	}

	/**
	 * Encode headers as lines, in the order of the map and of each name's values.
	 * @param headers the headers
	 * @return one {@code Name: value} line per value, each ending with a line break
	 * @throws IllegalArgumentException when a header cannot be stored (see
	 * {@link #check})
	 */
	public static String encode(Map<String, ? extends Collection<String>> headers) {
		StringBuilder text = new StringBuilder();
		headers.forEach((name, values) -> values.forEach((value) -> {
			check(name, value);
			text.append(name).append(": ").append(value).append('\n');
		}));
		return text.toString();
	}

	/**
	 * Decode the lines written by {@link #encode}.
	 * @param text the lines
	 * @return the headers, in order, each name with its values in order
	 * @throws IllegalArgumentException when a line is not a {@code Name: value} line
	 */
	public static Map<String, List<String>> decode(String text) {
		Map<String, List<String>> headers = new LinkedHashMap<>();
		for (String line : text.split("\n")) {
			if (line.isEmpty()) {
				continue;
			}
			int colon = line.indexOf(':');
			if (colon <= 0 || !line.startsWith(" ", colon + 1) || line.indexOf('\r') >= 0) {
				throw new IllegalArgumentException("Malformed stored header line: it is not 'Name: value'");
			}
			headers.computeIfAbsent(line.substring(0, colon), (name) -> new ArrayList<>())
				.add(line.substring(colon + 2));
		}
		return headers;
	}

	private static boolean hasLineBreak(String text) {
		return text.indexOf('\n') >= 0 || text.indexOf('\r') >= 0;
	}

}
