/**
 * Auto-configuration of the transactional outbox and its relay.
 */
@NullMarked
package dev.idempotency.autoconfigure.outbox;

import org.jspecify.annotations.NullMarked;
