package dev.idempotency.kafka;

import org.springframework.kafka.support.converter.ConversionException;

/**
 * Thrown when an {@link IdempotentListener @IdempotentListener} method whose declared
 * return type allowed it (for example {@code Object}) returned a future or a reactive
 * type. The transaction that would have marked the event rolls back.
 * <p>
 * Retrying would start the asynchronous work again each time, so this is a
 * {@link ConversionException}, which spring-kafka's error handlers send to the recoverer
 * at the first failure.
 */
class AsynchronousResultException extends ConversionException {

	AsynchronousResultException(String message) {
		super(message, (Throwable) null);
	}

}
