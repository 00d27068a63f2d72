package dev.idempotency.outbound;

import org.jspecify.annotations.Nullable;

/**
 * What became of an operation's earlier attempt, as a {@link ProviderStatusCheck} found
 * out from the provider.
 *
 * @param <T> the type of the operation's result
 * @since 0.1.0
 */
public sealed interface ProviderStatus<T extends @Nullable Object>
		permits ProviderStatus.Done, ProviderStatus.NotFound, ProviderStatus.Unknown {

	/**
	 * The provider performed the operation: complete with this result, send nothing.
	 * @param <T> the type of the result
	 * @param result the result, as the operation would have returned it
	 * @return the status
	 */
	static <T extends @Nullable Object> ProviderStatus<T> done(T result) {
		return new Done<>(result);
	}

	/**
	 * The provider has no trace of the operation: sending it again is safe.
	 * @param <T> the type of the result
	 * @return the status
	 */
	static <T extends @Nullable Object> ProviderStatus<T> notFound() {
		return new NotFound<>();
	}

	/**
	 * The provider cannot tell yet, for example because the operation is still being
	 * processed.
	 * @param <T> the type of the result
	 * @return the status
	 */
	static <T extends @Nullable Object> ProviderStatus<T> unknown() {
		return new Unknown<>();
	}

	/**
	 * The operation was performed.
	 *
	 * @param <T> the type of the result
	 * @param result the result
	 */
	record Done<T extends @Nullable Object>(T result) implements ProviderStatus<T> {
	}

	/**
	 * The provider has no trace of the operation.
	 *
	 * @param <T> the type of the result
	 */
	record NotFound<T extends @Nullable Object>() implements ProviderStatus<T> {
	}

	/**
	 * The provider cannot tell.
	 *
	 * @param <T> the type of the result
	 */
	record Unknown<T extends @Nullable Object>() implements ProviderStatus<T> {
	}

}
