/**
 * Fault injection against the payments-service sample run as real processes.
 */
@NullMarked
package dev.idempotency.reliability;

import org.jspecify.annotations.NullMarked;
