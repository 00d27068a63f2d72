package dev.idempotency.kafka;

import org.springframework.kafka.support.converter.ConversionException;

/**
 * Thrown for a record without an event id, so that the container's error handler deals
 * with it (typically by sending it to a dead-letter topic) instead of the listener
 * processing it without protection against redelivery.
 * <p>
 * No retry can give the record an id, so this is a {@link ConversionException}: one of
 * the exceptions that spring-kafka's error handlers ({@code DefaultErrorHandler}, the
 * after-rollback processor) and retry topics treat as fatal by default, sending the
 * record to the recoverer at its first failure. An application that replaces those
 * classifications must keep this exception among the not-retryable ones.
 *
 * @since 0.1.0
 */
public class MissingEventIdException extends ConversionException {

	/**
	 * Create a new exception.
	 * @param message the message
	 */
	public MissingEventIdException(String message) {
		super(message, (Throwable) null);
	}

}
