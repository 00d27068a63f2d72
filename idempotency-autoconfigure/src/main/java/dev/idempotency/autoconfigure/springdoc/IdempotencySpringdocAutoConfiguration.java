package dev.idempotency.autoconfigure.springdoc;

import dev.idempotency.web.Idempotent;
import org.springdoc.core.customizers.GlobalOperationCustomizer;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the OpenAPI description of {@link Idempotent @Idempotent}
 * operations, when springdoc is on the class path: each gets the {@code Idempotency-Key}
 * request header (required or not, as declared), the problem responses of the protocol
 * (400, 409, 413, 422, with {@code Retry-After} on 409), and the
 * {@code Idempotent-Replayed} header on its successful responses. What an operation
 * declares itself is kept. Declare a bean named {@code idempotencyOperationCustomizer} to
 * replace it.
 *
 * @since 0.1.0
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({ Idempotent.class, GlobalOperationCustomizer.class })
@ConditionalOnBooleanProperty(name = "idempotency.web.enabled", matchIfMissing = true)
public final class IdempotencySpringdocAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyOperationCustomizer")
	GlobalOperationCustomizer idempotencyOperationCustomizer() {
		return new IdempotentOperationCustomizer();
	}

}
