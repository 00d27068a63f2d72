/**
 * Delivery of outbox messages to HTTP providers that deduplicate by
 * {@code Idempotency-Key}.
 */
@NullMarked
package dev.idempotency.outbox.http;

import org.jspecify.annotations.NullMarked;
