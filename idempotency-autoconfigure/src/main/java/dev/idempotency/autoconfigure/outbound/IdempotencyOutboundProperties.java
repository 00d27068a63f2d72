package dev.idempotency.autoconfigure.outbound;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.idempotency.outbound.ProviderPolicy;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration properties of outbound calls.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency.outbound")
public class IdempotencyOutboundProperties {

	/**
	 * Policies of the providers this application calls, by provider name.
	 */
	private final Map<String, Provider> providers = new LinkedHashMap<>();

	/**
	 * Whether to add the idempotency key interceptor to every RestClient.Builder that
	 * Spring Boot provides. It sets a key only inside OutboundCalls.call(...).
	 */
	private boolean restClientInterceptor = true;

	public Map<String, Provider> getProviders() {
		return this.providers;
	}

	public boolean isRestClientInterceptor() {
		return this.restClientInterceptor;
	}

	public void setRestClientInterceptor(boolean restClientInterceptor) {
		this.restClientInterceptor = restClientInterceptor;
	}

	Map<String, ProviderPolicy> toPolicies() {
		Map<String, ProviderPolicy> policies = new LinkedHashMap<>();
		this.providers.forEach((name, provider) -> policies.put(name,
				new ProviderPolicy(provider.getKeyTtl(), provider.isStatusFirst(), provider.getHeaderName())));
		return policies;
	}

	/**
	 * The policy of one provider.
	 */
	public static class Provider {

		/**
		 * How long the provider remembers an idempotency key. An attempt of an operation
		 * that started longer ago is refused and left for manual review. When not set,
		 * attempts are never refused for age.
		 */
		private @Nullable Duration keyTtl;

		/**
		 * Whether every re-send to this provider must first ask what became of the
		 * earlier attempt, through a ProviderStatusCheck.
		 */
		private boolean statusFirst;

		/**
		 * Request header that carries the idempotency key.
		 */
		private String headerName = ProviderPolicy.IDEMPOTENCY_KEY_HEADER;

		public @Nullable Duration getKeyTtl() {
			return this.keyTtl;
		}

		public void setKeyTtl(@Nullable Duration keyTtl) {
			this.keyTtl = keyTtl;
		}

		public boolean isStatusFirst() {
			return this.statusFirst;
		}

		public void setStatusFirst(boolean statusFirst) {
			this.statusFirst = statusFirst;
		}

		public String getHeaderName() {
			return this.headerName;
		}

		public void setHeaderName(String headerName) {
			this.headerName = headerName;
		}

	}

}
