package dev.idempotency.core.jdbc;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes replayed headers as {@code Name: value} lines. Header names and values cannot
 * contain line breaks, so the text form is unambiguous and readable in {@code psql}.
 */
final class HeaderCodec {

	private HeaderCodec() {
	}

	/**
	 * Encode headers as lines.
	 * @param headers the headers
	 * @return one {@code Name: value} line per value
	 */
	static String encode(Map<String, List<String>> headers) {
		StringBuilder text = new StringBuilder();
		headers.forEach(
				(name, values) -> values.forEach((value) -> text.append(name).append(": ").append(value).append('\n')));
		return text.toString();
	}

	/**
	 * Decode the lines written by {@link #encode}.
	 * @param text the lines
	 * @return the headers, in order
	 */
	static Map<String, List<String>> decode(String text) {
		Map<String, List<String>> headers = new LinkedHashMap<>();
		for (String line : text.split("\n")) {
			if (line.isEmpty()) {
				continue;
			}
			int colon = line.indexOf(": ");
			if (colon <= 0) {
				throw new IllegalArgumentException("Malformed stored header line");
			}
			headers.computeIfAbsent(line.substring(0, colon), (name) -> new ArrayList<>())
				.add(line.substring(colon + 2));
		}
		return headers;
	}

}
