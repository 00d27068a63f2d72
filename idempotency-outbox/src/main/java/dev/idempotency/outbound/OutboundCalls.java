package dev.idempotency.outbound;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Runs the attempts of {@link OutboundOperation outbound operations}: one call of
 * {@link #call} is one attempt, and a retry (a {@code RetryTemplate}, a
 * {@code @Retryable} method, an outbox relay) calls it again with the same operation.
 * <p>
 * Before an attempt it
 * <ol>
 * <li>asks the provider's status when the attempt is a re-send and a
 * {@link ProviderStatusCheck} is given: if the earlier attempt took effect, it returns
 * that result and sends nothing;</li>
 * <li>refuses with {@link ProviderKeyExpiredException} when the operation started longer
 * than the provider's key TTL ago;</li>
 * <li>binds the operation to the current thread while the attempt runs, so that
 * {@link IdempotencyKeyInterceptor} puts its key on every request.</li>
 * </ol>
 *
 * @since 0.1.0
 */
public final class OutboundCalls {

	private static final Log logger = LogFactory.getLog(OutboundCalls.class);

	private static final ThreadLocal<@Nullable Binding> current = new ThreadLocal<>();

	private final Map<String, ProviderPolicy> providers;

	private final Clock clock;

	/**
	 * Create an instance on the system clock.
	 * @param providers the policies by provider name; a provider without one gets
	 * {@link ProviderPolicy#DEFAULT}
	 */
	public OutboundCalls(Map<String, ProviderPolicy> providers) {
		this(providers, Clock.systemUTC());
	}

	/**
	 * Create an instance.
	 * @param providers the policies by provider name; a provider without one gets
	 * {@link ProviderPolicy#DEFAULT}
	 * @param clock the clock that key lifetimes are measured on
	 */
	public OutboundCalls(Map<String, ProviderPolicy> providers, Clock clock) {
		Assert.notNull(providers, "providers must not be null");
		Assert.notNull(clock, "clock must not be null");
		providers.forEach((name, policy) -> {
			Assert.hasText(name, "provider names must not be empty");
			Assert.notNull(policy, "policies must not be null");
		});
		this.providers = Collections.unmodifiableMap(new LinkedHashMap<>(providers));
		this.clock = clock;
	}

	/**
	 * Run one attempt of an operation, without a status check.
	 * @param <T> the type of the result
	 * @param <E> the checked exception the attempt may throw, if any
	 * @param operation the operation
	 * @param attempt the attempt, for example a {@code RestClient} call
	 * @return the result of the attempt
	 * @throws E when the attempt fails
	 * @throws ProviderKeyExpiredException when the provider may have forgotten the key;
	 * nothing was sent
	 * @throws IllegalStateException when the provider is status-first and this is a
	 * re-send
	 */
	public <T extends @Nullable Object, E extends Exception> T call(OutboundOperation operation, Attempt<T, E> attempt)
			throws E {
		return call(operation, null, attempt);
	}

	/**
	 * Run one attempt of an operation, asking the provider's status first when it is a
	 * re-send.
	 * @param <T> the type of the result
	 * @param <E> the checked exception the attempt may throw, if any
	 * @param operation the operation
	 * @param statusCheck asks the provider what became of the earlier attempt, or
	 * {@code null}
	 * @param attempt the attempt, for example a {@code RestClient} call
	 * @return the result of the attempt, or the result the status check found
	 * @throws E when the attempt fails
	 * @throws ProviderKeyExpiredException when the provider may have forgotten the key
	 * and the status check did not find the operation done; nothing was sent
	 * @throws ProviderStatusUnknownException when the provider is status-first and the
	 * status check could not tell; nothing was sent
	 * @throws IllegalStateException when the provider is status-first, this is a re-send
	 * and no status check is given
	 */
	public <T extends @Nullable Object, E extends Exception> T call(OutboundOperation operation,
			@Nullable ProviderStatusCheck<T> statusCheck, Attempt<T, E> attempt) throws E {
		Assert.notNull(operation, "operation must not be null");
		Assert.notNull(attempt, "attempt must not be null");
		ProviderPolicy policy = policy(operation.provider());
		ProviderStatus<T> status = (operation.attempts() > 0) ? checkStatus(operation, policy, statusCheck) : null;
		if (status instanceof ProviderStatus.Done<T> done) {
			if (logger.isInfoEnabled()) {
				logger.info("Provider '" + operation.provider() + "' performed operation " + operation.keyHash()
						+ " (key hash) already; completing without sending it again");
			}
			return done.result();
		}
		// Past the key TTL only "done" helps: asking again later cannot make a re-send
		// safe.
		checkKeyTtl(operation, policy);
		if (status instanceof ProviderStatus.Unknown<T> && policy.statusFirst()) {
			throw new ProviderStatusUnknownException(operation);
		}
		int number = operation.startAttempt();
		if (logger.isDebugEnabled()) {
			logger.debug("Attempt " + number + " of operation " + operation.keyHash() + " (key hash) at provider '"
					+ operation.provider() + "'");
		}
		Binding previous = current.get();
		current.set(new Binding(operation, policy.headerName()));
		try {
			return attempt.run();
		}
		finally {
			if (previous != null) {
				current.set(previous);
			}
			else {
				current.remove();
			}
		}
	}

	private <T extends @Nullable Object> @Nullable ProviderStatus<T> checkStatus(OutboundOperation operation,
			ProviderPolicy policy, @Nullable ProviderStatusCheck<T> statusCheck) {
		if (statusCheck == null) {
			if (policy.statusFirst()) {
				throw new IllegalStateException("Provider '" + operation.provider()
						+ "' is status-first: pass a ProviderStatusCheck to OutboundCalls.call(...) so that a re-send"
						+ " asks what became of the earlier attempt");
			}
			return null;
		}
		ProviderStatus<T> status = statusCheck.status(operation);
		Assert.state(status != null, "A ProviderStatusCheck must not return null");
		return status;
	}

	private void checkKeyTtl(OutboundOperation operation, ProviderPolicy policy) {
		Duration keyTtl = policy.keyTtl();
		if (keyTtl == null) {
			return;
		}
		Instant now = this.clock.instant();
		if (now.isAfter(operation.startedAt().plus(keyTtl))) {
			ProviderKeyExpiredException ex = new ProviderKeyExpiredException(operation, keyTtl, now);
			logger.warn(ex.getMessage());
			throw ex;
		}
	}

	/**
	 * The policy of a provider.
	 * @param provider the provider's name
	 * @return its policy, or {@link ProviderPolicy#DEFAULT}
	 */
	public ProviderPolicy policy(String provider) {
		return this.providers.getOrDefault(provider, ProviderPolicy.DEFAULT);
	}

	/**
	 * Check that a key retention of our own tables is no shorter than any provider's key
	 * TTL: an operation may be retried for as long as its provider remembers the key, and
	 * for all that time a client's retry of the request that started it must be
	 * recognised, not start a second operation with new business identifiers.
	 * @param name the name of the retention, for the message, such as a property name
	 * @param retention the retention
	 * @throws IllegalStateException when a provider's key TTL is longer
	 */
	public void checkRetention(String name, Duration retention) {
		Assert.hasText(name, "name must not be empty");
		Assert.notNull(retention, "retention must not be null");
		this.providers.forEach((provider, policy) -> {
			Duration keyTtl = policy.keyTtl();
			if (keyTtl != null && keyTtl.compareTo(retention) > 0) {
				throw new IllegalStateException("The key retention " + name + " (" + retention
						+ ") is shorter than the key TTL of provider '" + provider + "' (" + keyTtl
						+ "): raise the retention to at least " + keyTtl + ", or lower the provider's key TTL");
			}
		});
	}

	static @Nullable Binding currentBinding() {
		return current.get();
	}

	record Binding(OutboundOperation operation, String headerName) {
	}

	/**
	 * One attempt of an operation: the request to the provider.
	 *
	 * @param <T> the type of the result
	 * @param <E> the checked exception it may throw; inferred as {@code RuntimeException}
	 * for a {@code RestClient} call
	 */
	@FunctionalInterface
	public interface Attempt<T extends @Nullable Object, E extends Exception> {

		/**
		 * Send the request.
		 * @return the result
		 * @throws E when it fails
		 */
		T run() throws E;

	}

}
