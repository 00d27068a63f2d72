/**
 * Auto-configuration of outbound calls: provider policies and the idempotency key
 * interceptor.
 */
@NullMarked
package dev.idempotency.autoconfigure.outbound;

import org.jspecify.annotations.NullMarked;
