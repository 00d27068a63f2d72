/**
 * The {@code Idempotency-Key} protocol in the OpenAPI description that springdoc
 * generates.
 */
@NullMarked
package dev.idempotency.autoconfigure.springdoc;

import org.jspecify.annotations.NullMarked;
