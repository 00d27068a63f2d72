/**
 * Hands an array over to the constructor of a type of the core package without a copy;
 * depends on nothing of the library, so that the core package can use it. Not an API for
 * applications.
 */
@NullMarked
package dev.idempotency.core.internal.handover;

import org.jspecify.annotations.NullMarked;
