package dev.idempotency.outbox.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.jspecify.annotations.Nullable;

/**
 * The largest record batch each topic accepts ({@code max.message.bytes}), read with an
 * {@link Admin} client made from the producer's settings and kept for a minute. A lookup
 * that fails (no permission to describe the topic's configuration, the cluster
 * unreachable, a topic that does not exist yet) leaves the limit unknown for a minute.
 */
final class TopicLimits implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(TopicLimits.class);

	private static final long KEPT_NANOS = TimeUnit.MINUTES.toNanos(1);

	private final @Nullable Map<String, Object> adminConfig;

	private final Map<String, Limit> limits = new ConcurrentHashMap<>();

	private final Set<String> warned = ConcurrentHashMap.newKeySet();

	private @Nullable Admin admin;

	private boolean adminFailed;

	/**
	 * Create the lookups.
	 * @param producerConfig the producer's settings, or {@code null} when they are not
	 * known: every limit is then unknown
	 */
	TopicLimits(@Nullable Map<String, Object> producerConfig) {
		if (producerConfig == null || !producerConfig.containsKey(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG)) {
			this.adminConfig = null;
			return;
		}
		Map<String, Object> config = new HashMap<>();
		Set<String> names = AdminClientConfig.configNames();
		producerConfig.forEach((name, value) -> {
			if (names.contains(name) && !name.equals(AdminClientConfig.CLIENT_ID_CONFIG)) {
				config.put(name, value);
			}
		});
		config.put(AdminClientConfig.CLIENT_ID_CONFIG, "outbox-topic-limits");
		this.adminConfig = config;
	}

	/**
	 * The largest record batch a topic accepts, in bytes.
	 * @param topic the topic
	 * @param timeout how long a lookup may take
	 * @return the limit, or {@code -1} when it is not known
	 */
	int maxMessageBytes(String topic, Duration timeout) {
		long now = System.nanoTime();
		Limit limit = this.limits.get(topic);
		if (limit != null && now - limit.readAt() < KEPT_NANOS) {
			return limit.bytes();
		}
		int bytes = lookUp(topic, timeout);
		this.limits.put(topic, new Limit(bytes, now));
		return bytes;
	}

	/**
	 * Read every topic's limit again at its next use: it may have changed.
	 */
	void forget() {
		this.limits.clear();
	}

	/**
	 * Read a topic's limit again at its next use.
	 * @param topic the topic
	 */
	void forget(String topic) {
		this.limits.remove(topic);
	}

	private int lookUp(String topic, Duration timeout) {
		Admin client = admin();
		if (client == null || timeout.isNegative() || timeout.isZero()) {
			return -1;
		}
		ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
		try {
			Config config = client.describeConfigs(List.of(resource))
				.all()
				.get(timeout.toNanos(), TimeUnit.NANOSECONDS)
				.get(resource);
			ConfigEntry entry = (config != null) ? config.get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG) : null;
			return (entry != null && entry.value() != null) ? Integer.parseInt(entry.value()) : -1;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return -1;
		}
		catch (ExecutionException | java.util.concurrent.TimeoutException | RuntimeException ex) {
			Throwable cause = (ex instanceof ExecutionException) ? ex.getCause() : ex;
			if (!(cause instanceof UnknownTopicOrPartitionException) && this.warned.add(topic)) {
				logger.warn("Cannot read max.message.bytes of topic '" + topic + "' (" + cause
						+ "): the outbox's producer batches its records up to its batch.size, and a topic that takes"
						+ " less would refuse such batches until their delivery times out");
			}
			return -1;
		}
	}

	private synchronized @Nullable Admin admin() {
		if (this.admin == null && this.adminConfig != null && !this.adminFailed) {
			try {
				this.admin = Admin.create(this.adminConfig);
			}
			catch (RuntimeException ex) {
				this.adminFailed = true;
				logger.warn(
						"Cannot create the Kafka admin client that reads the topics' max.message.bytes: the"
								+ " outbox's producer batches its records up to its batch.size whatever a topic takes",
						ex);
			}
		}
		return this.admin;
	}

	@Override
	public synchronized void close() {
		if (this.admin != null) {
			this.admin.close(Duration.ofSeconds(5));
			this.admin = null;
		}
	}

	private record Limit(int bytes, long readAt) {
	}

}
