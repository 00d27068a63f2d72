/**
 * Auto-configuration of outbound calls: provider policies, the idempotency key
 * interceptor and the check of key retention against provider key TTLs.
 */
@NullMarked
package dev.idempotency.autoconfigure.outbound;

import org.jspecify.annotations.NullMarked;
