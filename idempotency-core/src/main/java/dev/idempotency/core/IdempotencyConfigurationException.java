package dev.idempotency.core;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Thrown at startup when the library's configuration or the database it needs cannot
 * work: what is wrong, and what to do about it. With Spring Boot, a failure analyzer
 * reports the two parts as the failure's description and action.
 * <p>
 * The message is the description followed by the action.
 *
 * @since 0.1.0
 */
public class IdempotencyConfigurationException extends IllegalStateException {

	private final String description;

	private final String action;

	/**
	 * Create an exception.
	 * @param description what is wrong, in full sentences
	 * @param action what to do about it, in full sentences
	 */
	public IdempotencyConfigurationException(String description, String action) {
		this(description, action, null);
	}

	/**
	 * Create an exception with a cause.
	 * @param description what is wrong, in full sentences
	 * @param action what to do about it, in full sentences
	 * @param cause the cause, or {@code null}
	 */
	public IdempotencyConfigurationException(String description, String action, @Nullable Throwable cause) {
		super(message(description, action), cause);
		this.description = description;
		this.action = action;
	}

	private static String message(String description, String action) {
		Assert.hasText(description, "description must not be empty");
		Assert.hasText(action, "action must not be empty");
		return description + " " + action;
	}

	/**
	 * Return what is wrong.
	 * @return the description
	 */
	public String getDescription() {
		return this.description;
	}

	/**
	 * Return what to do about it.
	 * @return the action
	 */
	public String getAction() {
		return this.action;
	}

}
