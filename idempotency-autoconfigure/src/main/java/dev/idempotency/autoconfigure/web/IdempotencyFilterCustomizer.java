package dev.idempotency.autoconfigure.web;

import dev.idempotency.web.IdempotencyFilter;

/**
 * Customizes the auto-configured {@link IdempotencyFilter} beyond what the
 * {@code idempotency.web.*} properties express, such as the handler mappings it searches.
 * Customizers run in order, after the properties have been applied.
 *
 * @since 0.1.0
 */
@FunctionalInterface
public interface IdempotencyFilterCustomizer {

	/**
	 * Customize the filter.
	 * @param filter the filter to customize
	 */
	void customize(IdempotencyFilter filter);

}
