/**
 * A transactional outbox: {@link dev.idempotency.outbox.Outbox} writes messages in the
 * caller's transaction and {@link dev.idempotency.outbox.OutboxRelay} delivers them at
 * least once, in order per key, to an {@link dev.idempotency.outbox.OutboxDestination}.
 */
@NullMarked
package dev.idempotency.outbox;

import org.jspecify.annotations.NullMarked;
