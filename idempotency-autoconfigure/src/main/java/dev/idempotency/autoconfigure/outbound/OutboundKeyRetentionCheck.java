package dev.idempotency.autoconfigure.outbound;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * Fails startup when a key retention of our own tables is shorter than a provider's key
 * TTL. An operation may be retried for as long as its provider remembers the key; all
 * that time a client's retry of the request that started it must find our key and replay,
 * not start a second operation with new business identifiers.
 */
class OutboundKeyRetentionCheck implements InitializingBean {

	private final IdempotencyOutboundProperties properties;

	private final Binder binder;

	OutboundKeyRetentionCheck(IdempotencyOutboundProperties properties, Environment environment) {
		this.properties = properties;
		this.binder = Binder.get(environment);
	}

	@Override
	public void afterPropertiesSet() {
		List<String> problems = new ArrayList<>();
		for (String retentionProperty : this.properties.getRetentionProperties()) {
			this.binder.bind(retentionProperty, Duration.class)
				.ifBound((retention) -> this.properties.getProviders().forEach((name, provider) -> {
					Duration keyTtl = provider.getKeyTtl();
					if (keyTtl != null && keyTtl.compareTo(retention) > 0) {
						problems.add(retentionProperty + " (" + retention + ") is shorter than "
								+ "idempotency.outbound.providers." + name + ".key-ttl (" + keyTtl + ")");
					}
				}));
		}
		if (!problems.isEmpty()) {
			throw new IllegalStateException("Key retention shorter than a provider key TTL: "
					+ String.join("; ", problems) + ". An operation may be retried for as long as its provider "
					+ "remembers the key, and for all that time a retry of the request that started it must be "
					+ "recognised. Raise the retention to at least the longest key TTL, or lower the key TTL.");
		}
	}

}
