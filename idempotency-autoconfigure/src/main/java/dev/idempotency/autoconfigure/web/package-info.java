/**
 * Auto-configuration of {@code @Idempotent} for Spring MVC.
 */
@NullMarked
package dev.idempotency.autoconfigure.web;

import org.jspecify.annotations.NullMarked;
