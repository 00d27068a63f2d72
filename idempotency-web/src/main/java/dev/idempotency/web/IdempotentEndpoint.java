package dev.idempotency.web;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.jspecify.annotations.Nullable;

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
		@Nullable AbandonedClaimPolicy abandoned) {

	static IdempotentEndpoint of(String name, Method method, Class<?> beanType, Idempotent annotation) {
		if (annotation.mode().length > 1 || annotation.onAbandonedClaim().length > 1) {
			throw new IdempotencyConfigurationException(
					"@Idempotent on " + name + " names more than one mode or abandoned-claim policy.",
					"Name at most one of each.");
		}
		try {
			Duration lease = annotation.lease().isBlank() ? null : Durations.parse(annotation.lease(), "lease");
			Duration retention = annotation.retention().isBlank() ? null
					: Durations.parse(annotation.retention(), "retention");
			return new IdempotentEndpoint(name, method, beanType, annotation.required(),
					(annotation.mode().length == 1) ? annotation.mode()[0] : null, lease, retention,
					List.of(annotation.fingerprintFields()),
					(annotation.onAbandonedClaim().length == 1) ? annotation.onAbandonedClaim()[0] : null);
		}
		catch (IllegalArgumentException ex) {
			throw new IdempotencyConfigurationException("Invalid @Idempotent on " + name + ": " + ex.getMessage() + ".",
					"Write it as a positive duration: 500ms, 30s, 5m, 2h, 7d or PT30S.", ex);
		}
	}

}
