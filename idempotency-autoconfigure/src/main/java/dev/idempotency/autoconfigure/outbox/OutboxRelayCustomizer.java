package dev.idempotency.autoconfigure.outbox;

import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayBuilder;

/**
 * Customizes the auto-configured {@link OutboxRelay} beyond what the
 * {@code idempotency.outbox.*} properties express, for example a transaction manager of
 * its own.
 *
 * @since 0.1.0
 */
@FunctionalInterface
public interface OutboxRelayCustomizer {

	/**
	 * Customize the relay's builder, after the properties were applied.
	 * @param builder the builder
	 */
	void customize(OutboxRelayBuilder builder);

}
