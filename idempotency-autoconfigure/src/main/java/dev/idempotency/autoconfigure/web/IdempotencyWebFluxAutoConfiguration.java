package dev.idempotency.autoconfigure.web;

import dev.idempotency.web.Idempotent;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.reactive.result.method.RequestMappingInfoHandlerMapping;

/**
 * {@link Idempotent @Idempotent} is for Spring MVC only: in a WebFlux application, a
 * handler method annotated with it would run without the protocol, so the application
 * refuses to start instead, naming the handlers.
 *
 * @since 0.1.0
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass({ Idempotent.class, RequestMappingInfoHandlerMapping.class })
@ConditionalOnBooleanProperty(name = "idempotency.web.enabled", matchIfMissing = true)
public final class IdempotencyWebFluxAutoConfiguration {

	@Bean
	static IdempotentWebFluxHandlers idempotentWebFluxHandlers(
			ObjectProvider<RequestMappingInfoHandlerMapping> handlerMappings) {
		return new IdempotentWebFluxHandlers(handlerMappings);
	}

}
