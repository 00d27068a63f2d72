/**
 * Trace context through the outbox with Micrometer Tracing: captured at append, continued
 * by each send of the relay.
 */
@NullMarked
package dev.idempotency.outbox.tracing;

import org.jspecify.annotations.NullMarked;
