package dev.idempotency.outbound;

import org.jspecify.annotations.Nullable;

/**
 * Asks a provider what became of an operation's earlier attempt, before
 * {@link OutboundCalls} sends it again. Implement it with the provider's lookup, by the
 * operation's key or by a business reference sent with it.
 * <p>
 * A lookup that fails throws; the attempt then fails without sending, and the caller's
 * retry asks again later.
 *
 * @param <T> the type of the operation's result
 * @since 0.1.0
 */
@FunctionalInterface
public interface ProviderStatusCheck<T extends @Nullable Object> {

	/**
	 * Ask the provider.
	 * @param operation the operation, with its key
	 * @return {@link ProviderStatus#done done} with the result when the provider
	 * performed it, {@link ProviderStatus#notFound notFound} when it has no trace of it,
	 * {@link ProviderStatus#unknown unknown} when it cannot tell
	 */
	ProviderStatus<T> status(OutboundOperation operation);

}
