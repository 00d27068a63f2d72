package dev.idempotency.kafka;

import org.springframework.kafka.KafkaException;

/**
 * Thrown for a record without an event id, so that the container's error handler deals
 * with it (typically by sending it to a dead-letter topic) instead of the listener
 * processing it without protection against redelivery. It is not worth retrying: add it
 * to the error handler's not-retryable exceptions.
 */
public class MissingEventIdException extends KafkaException {

	/**
	 * Create a new exception.
	 * @param message the message
	 */
	public MissingEventIdException(String message) {
		super(message);
	}

}
