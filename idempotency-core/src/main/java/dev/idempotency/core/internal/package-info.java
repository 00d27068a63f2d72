/**
 * Internals shared by the idempotency modules; not an API for applications.
 */
@NullMarked
package dev.idempotency.core.internal;

import org.jspecify.annotations.NullMarked;
