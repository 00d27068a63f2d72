package dev.idempotency.autoconfigure.web;

import java.util.List;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.web.Idempotent;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.reactive.result.method.RequestMappingInfoHandlerMapping;

/**
 * Refuses to start a WebFlux application with {@link Idempotent @Idempotent} handler
 * methods, which nothing would protect.
 */
final class IdempotentWebFluxHandlers implements SmartInitializingSingleton {

	private final ObjectProvider<RequestMappingInfoHandlerMapping> handlerMappings;

	IdempotentWebFluxHandlers(ObjectProvider<RequestMappingInfoHandlerMapping> handlerMappings) {
		this.handlerMappings = handlerMappings;
	}

	@Override
	public void afterSingletonsInstantiated() {
		List<String> annotated = this.handlerMappings.orderedStream()
			.flatMap((mapping) -> mapping.getHandlerMethods().values().stream())
			.filter((handler) -> AnnotatedElementUtils.hasAnnotation(handler.getMethod(), Idempotent.class))
			.map(HandlerMethod::getShortLogMessage)
			.distinct()
			.sorted()
			.toList();
		if (!annotated.isEmpty()) {
			throw new IdempotencyConfigurationException(
					"@Idempotent is not supported on WebFlux handlers, which"
							+ " would run without the Idempotency-Key protocol: " + String.join(", ", annotated) + ".",
					"Serve them with Spring MVC (spring-boot-starter-webmvc), or remove @Idempotent.");
		}
	}

}
