/**
 * The idempotency primitives: stores for claimed keys and processed events, request
 * fingerprints, key validation and derivation.
 */
@NullMarked
package dev.idempotency.core;

import org.jspecify.annotations.NullMarked;
