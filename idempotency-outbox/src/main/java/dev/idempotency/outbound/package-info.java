/**
 * Calling other services safely: an idempotency key bound to a business operation and
 * sent on every attempt, the provider's key lifetime, and asking for the status before
 * sending again.
 */
@NullMarked
package dev.idempotency.outbound;

import org.jspecify.annotations.NullMarked;
