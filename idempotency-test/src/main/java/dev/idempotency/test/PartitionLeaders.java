package dev.idempotency.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * Waits until every partition of new topics has a leader that answers as one.
 * <p>
 * A topic is created before its partitions' leaders are ready: a burst of sends right
 * after creating it meets {@code NOT_LEADER_OR_FOLLOWER}, and an idempotent producer may
 * then stall on out-of-order sequence numbers until its records expire. Call
 * {@link #await(String, Duration, String...)} between creating topics and sending to
 * them.
 *
 * @since 0.1.0
 */
public final class PartitionLeaders {

	private PartitionLeaders() {
	}

	/**
	 * Wait until each partition of the topics has a leader that serves offset requests
	 * (which only the leader answers).
	 * @param bootstrapServers the broker's bootstrap servers
	 * @param timeout how long to wait at most
	 * @param topics the topics
	 * @throws IllegalStateException when a partition has no working leader in time
	 */
	public static void await(String bootstrapServers, Duration timeout, String... topics) {
		long deadline = System.nanoTime() + timeout.toNanos();
		try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
			Exception last = null;
			while (System.nanoTime() < deadline) {
				try {
					if (ready(admin, List.of(topics))) {
						return;
					}
				}
				catch (ExecutionException | TimeoutException ex) {
					// Unknown topic or no leader yet: ask again.
					last = ex;
				}
				Thread.sleep(50);
			}
			throw new IllegalStateException("Partitions of " + List.of(topics) + " have no leader after " + timeout,
					last);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted while waiting for partition leaders", ex);
		}
	}

	private static boolean ready(Admin admin, Collection<String> topics)
			throws ExecutionException, TimeoutException, InterruptedException {
		Map<String, TopicDescription> descriptions = admin.describeTopics(topics)
			.allTopicNames()
			.get(10, TimeUnit.SECONDS);
		List<TopicPartition> partitions = new ArrayList<>();
		for (TopicDescription description : descriptions.values()) {
			for (TopicPartitionInfo partition : description.partitions()) {
				if (partition.leader() == null || partition.leader().isEmpty()) {
					return false;
				}
				partitions.add(new TopicPartition(description.name(), partition.partition()));
			}
		}
		Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
		partitions.forEach((partition) -> latest.put(partition, OffsetSpec.latest()));
		admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
		return true;
	}

}
