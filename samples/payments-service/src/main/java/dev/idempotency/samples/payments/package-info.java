/**
 * A payments service on the idempotency starter.
 */
@NullMarked
package dev.idempotency.samples.payments;

import org.jspecify.annotations.NullMarked;
