package dev.idempotency.web;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.jspecify.annotations.Nullable;

import org.springframework.util.StringValueResolver;

/**
 * What one {@link Idempotent @Idempotent} handler method asks for; {@code null} means the
 * application's default.
 *
 * @param name the handler's name, for messages
 * @param method the handler method
 * @param beanType the type of the controller bean, whose {@code @Transactional} applies
 * to the method too
 */
record IdempotentEndpoint(String name, Method method, Class<?> beanType, boolean required, @Nullable ClaimMode mode,
		@Nullable Duration lease, @Nullable Duration retention, List<String> fingerprintFields,
		@Nullable AbandonedClaimPolicy abandoned, @Nullable Duration waitFor) {

	/**
	 * Read what an annotation asks for, its durations with their placeholders resolved.
	 */
	static IdempotentEndpoint of(String name, Method method, Class<?> beanType, Idempotent annotation,
			StringValueResolver placeholders) {
		if (annotation.mode().length > 1 || annotation.onAbandonedClaim().length > 1) {
			throw new IdempotencyConfigurationException(
					"@Idempotent on " + name + " names more than one mode or abandoned-claim policy.",
					"Name at most one of each.");
		}
		try {
			String leaseText = resolve(annotation.lease(), placeholders);
			String retentionText = resolve(annotation.retention(), placeholders);
			String waitForText = resolve(annotation.waitFor(), placeholders);
			Duration lease = leaseText.isBlank() ? null : Durations.parse(leaseText, "lease");
			Duration retention = retentionText.isBlank() ? null : Durations.parse(retentionText, "retention");
			Duration waitFor = waitForText.isBlank() ? null : Durations.parseOrZero(waitForText, "waitFor");
			return new IdempotentEndpoint(name, method, beanType, annotation.required(),
					(annotation.mode().length == 1) ? annotation.mode()[0] : null, lease, retention,
					List.of(annotation.fingerprintFields()),
					(annotation.onAbandonedClaim().length == 1) ? annotation.onAbandonedClaim()[0] : null, waitFor);
		}
		catch (IllegalArgumentException ex) {
			throw new IdempotencyConfigurationException("Invalid @Idempotent on " + name + ": " + ex.getMessage() + ".",
					"Write it as a positive duration: 500ms, 30s, 5m, 2h, 7d or PT30S.", ex);
		}
	}

	private static String resolve(String text, StringValueResolver placeholders) {
		if (text.isEmpty()) {
			return text;
		}
		String resolved = placeholders.resolveStringValue(text);
		return (resolved != null) ? resolved : "";
	}

}
