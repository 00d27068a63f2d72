package dev.idempotency.web;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the durations written in {@link Idempotent} attributes.
 */
final class Durations {

	private static final Pattern SIMPLE = Pattern.compile("^(\\d+)(ms|s|m|h|d)$");

	private Durations() {
	}

	static Duration parse(String text, String attribute) {
		Duration duration = parseAny(text, attribute);
		if (duration.isNegative() || duration.isZero()) {
			throw new IllegalArgumentException("@Idempotent(" + attribute + ") must be positive: '" + text + "'");
		}
		return duration;
	}

	/**
	 * Parse a duration that may be zero, such as a wait that is not wanted.
	 */
	static Duration parseOrZero(String text, String attribute) {
		Duration duration = text.trim().equals("0") ? Duration.ZERO : parseAny(text, attribute);
		if (duration.isNegative()) {
			throw new IllegalArgumentException("@Idempotent(" + attribute + ") must not be negative: '" + text + "'");
		}
		return duration;
	}

	private static Duration parseAny(String text, String attribute) {
		String value = text.trim().toLowerCase(Locale.ROOT);
		Matcher matcher = SIMPLE.matcher(value);
		try {
			Duration duration;
			if (matcher.matches()) {
				long amount = Long.parseLong(matcher.group(1));
				duration = switch (matcher.group(2)) {
					case "ms" -> Duration.ofMillis(amount);
					case "s" -> Duration.ofSeconds(amount);
					case "m" -> Duration.ofMinutes(amount);
					case "h" -> Duration.ofHours(amount);
					default -> Duration.ofDays(amount);
				};
			}
			else {
				duration = Duration.parse(text.trim());
			}
			return duration;
		}
		catch (DateTimeParseException | ArithmeticException ex) {
			throw new IllegalArgumentException("@Idempotent(" + attribute + ") is not a duration: '" + text
					+ "'; write it as 500ms, 30s, 5m, 2h, 7d or PT30S", ex);
		}
	}

}
