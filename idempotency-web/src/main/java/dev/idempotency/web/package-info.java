/**
 * {@link dev.idempotency.web.Idempotent @Idempotent} for Spring MVC: the
 * {@code Idempotency-Key} protocol, served by the
 * {@link dev.idempotency.web.IdempotencyFilter}.
 */
@NullMarked
package dev.idempotency.web;

import org.jspecify.annotations.NullMarked;
