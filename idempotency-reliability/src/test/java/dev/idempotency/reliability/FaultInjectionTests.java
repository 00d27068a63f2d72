package dev.idempotency.reliability;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The payments service as two real processes on a PostgreSQL and a Kafka broker of their
 * own, under retried load, while replicas, the consumer, the database and the broker are
 * killed and restarted. After each scenario: every payment charged once and by the
 * provider once, every outbox row published and in Kafka in its order's order, no claim
 * held past its lease, and the service serving again.
 * <p>
 * Short by default; {@code -Dreliability.long=true} for the long run.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FaultInjectionTests {

	private static Cluster cluster;

	private static LoadClient client;

	private static Checks checks;

	@BeforeAll
	static void startCluster() {
		cluster = Cluster.get();
		client = new LoadClient(cluster);
		checks = new Checks(cluster);
	}

	@AfterAll
	static void printSummary() {
		if (cluster != null) {
			Summary.print(cluster.workDir);
		}
	}

	@Test
	@Order(1)
	void replicasKilledAtRandomMomentsUnderRetriedLoad() {
		String prefix = "kill-replica";
		int cycles = Cluster.longRun() ? 20 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		int kills = Faults.killReplicas(cluster, cycles, Duration.ofSeconds(1), Duration.ofSeconds(5));
		stop.set(true);
		LoadClient.Load done = load.join();
		cluster.ensureReplicasUp();
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of());
		Summary.add(Summary.Row.of("1. replica SIGKILL under retried HTTP load", done.operations().size(),
				kills + " replica SIGKILLs", findings, done.unanswered().size(), "n/a (restarted)"));
		assertClean(findings, done);
	}

	@Test
	@Order(2)
	void consumerKilledBetweenItsCommitAndItsOffsetCommit() throws Exception {
		String prefix = "kill-consumer";
		int cycles = Cluster.longRun() ? 12 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		Set<String> orders = ConcurrentHashMap.newKeySet();
		CompletableFuture<Void> producer = CompletableFuture.runAsync(() -> {
			try (KafkaProducer<String, String> kafka = producer()) {
				for (int n = 0; n < 40 || !stop.get(); n++) {
					String orderId = prefix + "-order-" + n;
					kafka.send(orderConfirmed(orderId)).get(30, TimeUnit.SECONDS);
					orders.add(orderId);
					Pause.briefly(Duration.ofMillis(100));
				}
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
		});
		int kills = Faults.killReplicas(cluster, cycles, Duration.ofSeconds(2), Duration.ofSeconds(6));
		stop.set(true);
		producer.join();
		cluster.ensureReplicasUp();
		await().atMost(Duration.ofMinutes(3))
			.pollInterval(Duration.ofMillis(500))
			.until(() -> cluster.database.count("SELECT count(DISTINCT order_id) FROM payment WHERE order_id LIKE ?",
					prefix + "-%") >= orders.size());
		Checks.Findings findings = checks.check(prefix, Map.of(), orders);
		Summary.add(Summary.Row.of("2. consumer SIGKILL under Kafka load (between DB and offset commit)", orders.size(),
				kills + " replica SIGKILLs", findings, 0, "n/a (restarted)"));
		assertThat(findings.clean()).as(findings.toString()).isTrue();
	}

	@Test
	@Order(3)
	void postgresRestartedKilledAndStoppedUnderLoad() {
		String prefix = "postgres";
		int restarts = Cluster.longRun() ? 10 : 1;
		int kills = Cluster.longRun() ? 140 : 1;
		int stops = Cluster.longRun() ? 3 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		List<Long> pids = cluster.replicas.stream().map(Replica::pid).toList();
		for (int i = 0; i < restarts; i++) {
			Pause.randomly(Duration.ofMillis(500), Duration.ofSeconds(3));
			cluster.postgres.stop();
			cluster.postgres.start();
		}
		for (int i = 0; i < kills; i++) {
			// A crash of the server: every backend gone at once, recovery from the WAL.
			Pause.randomly(Duration.ofMillis(500), Duration.ofSeconds(3));
			cluster.postgres.kill();
			cluster.postgres.start();
		}
		for (int i = 0; i < stops; i++) {
			Pause.randomly(Duration.ofSeconds(1), Duration.ofSeconds(3));
			cluster.postgres.stop();
			// Down for 15 s: longer than the web lease, so claims made before it expire
			// while nothing can be written.
			Pause.briefly(Duration.ofSeconds(15));
			cluster.postgres.start();
		}
		String faults = restarts + " restarts, " + kills + " SIGKILLs, " + stops + " stops of 15 s";
		Pause.briefly(Duration.ofSeconds(2));
		stop.set(true);
		LoadClient.Load done = load.join();
		boolean recovered = servesAgainWithoutRestart(prefix, pids);
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of());
		Summary.add(Summary.Row.of("3. PostgreSQL restarted, SIGKILLed, stopped 15 s under load",
				done.operations().size(), faults, findings, done.unanswered().size(), recovered ? "yes" : "NO"));
		assertClean(findings, done);
		assertThat(recovered).as("both replicas serve again, without a restart").isTrue();
	}

	@Test
	@Order(4)
	void brokerKilledAndStoppedMidStreamForLongerThanTheRelayLease() {
		String prefix = "broker";
		int cycles = Cluster.longRun() ? 3 : 1;
		Duration down = Replica.RELAY_LEASE.plusSeconds(3);
		AtomicBoolean stop = new AtomicBoolean();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		List<Long> pids = cluster.replicas.stream().map(Replica::pid).toList();
		int faults = 0;
		for (int i = 0; i < cycles; i++) {
			Pause.randomly(Duration.ofSeconds(2), Duration.ofSeconds(4));
			cluster.broker.kill();
			Pause.briefly(down);
			cluster.broker.start(Cluster.STARTUP);
			Pause.randomly(Duration.ofSeconds(2), Duration.ofSeconds(4));
			cluster.broker.terminate();
			Pause.briefly(down);
			cluster.broker.start(Cluster.STARTUP);
			faults += 2;
		}
		Pause.briefly(Duration.ofSeconds(2));
		stop.set(true);
		LoadClient.Load done = load.join();
		// The consumer is back too: a confirmed order sent now is charged.
		String orderId = prefix + "-order-after";
		try (KafkaProducer<String, String> kafka = producer()) {
			kafka.send(orderConfirmed(orderId)).get(30, TimeUnit.SECONDS);
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
		boolean consumed = awaitCharged(orderId, Duration.ofMinutes(2));
		boolean recovered = consumed && servesAgainWithoutRestart(prefix, pids);
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of(orderId));
		Summary.add(Summary.Row.of("4. Kafka broker SIGKILLed and stopped mid-stream, down " + down.toSeconds() + " s",
				done.operations().size(), faults + " (" + cycles + "x SIGKILL, SIGTERM)", findings,
				done.unanswered().size(), recovered ? "yes" : "NO"));
		assertClean(findings, done);
		assertThat(recovered).as("both replicas serve and consume again, without a restart").isTrue();
	}

	@Test
	@Order(6)
	void oneHundredConcurrentRequestsWithOneKeyOnBothReplicas() throws Exception {
		String prefix = "same-key";
		int rounds = Cluster.longRun() ? 10 : 1;
		Map<String, String> answered = new HashMap<>();
		int operations = 0;
		int unanswered = 0;
		List<String> disagreements = new ArrayList<>();
		ExecutorService executor = Executors.newFixedThreadPool(100);
		try {
			for (int round = 0; round < rounds; round++) {
				String key = prefix + "-key-" + round;
				String orderId = prefix + "-order-" + round;
				CountDownLatch start = new CountDownLatch(1);
				List<LoadClient.Operation> racers = new ArrayList<>();
				List<java.util.concurrent.Future<?>> futures = new ArrayList<>();
				for (int i = 0; i < 100; i++) {
					LoadClient.Operation operation = new LoadClient.Operation(key, orderId, 1);
					racers.add(operation);
					futures.add(executor.submit(() -> {
						start.await();
						client.pay(operation);
						return null;
					}));
				}
				start.countDown();
				for (java.util.concurrent.Future<?> future : futures) {
					future.get(5, TimeUnit.MINUTES);
				}
				operations += racers.size();
				Set<String> paymentIds = new java.util.HashSet<>();
				for (LoadClient.Operation racer : racers) {
					if (racer.paymentId != null) {
						paymentIds.add(racer.paymentId);
					}
					else {
						unanswered++;
					}
				}
				if (paymentIds.size() != 1) {
					disagreements.add(key + " answered with " + paymentIds);
				}
				paymentIds.forEach((id) -> answered.put(key + "#" + id, id));
			}
		}
		finally {
			executor.shutdownNow();
		}
		Checks.Findings findings = checks.check(prefix, answered, Set.of());
		disagreements.forEach(findings::doubled);
		Summary.add(Summary.Row.of("6. 100 concurrent requests, one key, both replicas", operations,
				rounds + " races of 100", findings, unanswered, "n/a"));
		assertThat(findings.clean()).as(findings.toString()).isTrue();
		assertThat(unanswered).isZero();
	}

	@Test
	@Order(8)
	void replicasStoppedWithSigtermUnderLoadFinishWhatTheyAcceptedWithinTheBudget() {
		String prefix = "sigterm";
		int cycles = Cluster.longRun() ? 10 : 1;
		// The budget of the graceful shutdown recipe (terminationGracePeriodSeconds).
		Duration budget = Duration.ofSeconds(60);
		AtomicBoolean stop = new AtomicBoolean();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		List<Duration> exits = new ArrayList<>();
		for (int i = 0; i < cycles; i++) {
			Pause.randomly(Duration.ofSeconds(2), Duration.ofSeconds(5));
			Replica replica = cluster.replicas.get(i % cluster.replicas.size());
			exits.add(replica.terminate(budget.plusSeconds(30)));
			replica.start();
			replica.awaitUp(Cluster.STARTUP);
		}
		stop.set(true);
		LoadClient.Load done = load.join();
		cluster.ensureReplicasUp();
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of());
		Duration longest = exits.stream().max(Duration::compareTo).orElse(Duration.ZERO);
		Summary.add(Summary.Row.of(
				"8. replica SIGTERM under load", done.operations().size(), cycles + " SIGTERMs, longest exit "
						+ longest.toMillis() + " ms, " + done.serverErrors() + " 5xx answers",
				findings, done.unanswered().size(), "n/a (restarted)"));
		assertClean(findings, done);
		assertThat(longest).as("exit after SIGTERM").isLessThan(budget);
	}

	private static boolean servesAgainWithoutRestart(String prefix, List<Long> pids) {
		boolean sameProcesses = cluster.replicas.stream().map(Replica::pid).toList().equals(pids);
		boolean serving = true;
		for (Replica replica : cluster.replicas) {
			LoadClient.Operation probe = new LoadClient.Operation(prefix + "-key-probe-" + replica.name(),
					prefix + "-probe-" + replica.name(), 1);
			serving &= client.payOn(replica, probe);
		}
		return sameProcesses && serving;
	}

	private static boolean awaitCharged(String orderId, Duration timeout) {
		try {
			await().atMost(timeout)
				.pollInterval(Duration.ofMillis(500))
				.until(() -> cluster.database.count("SELECT count(*) FROM payment WHERE order_id = ?", orderId) > 0);
			return true;
		}
		catch (org.awaitility.core.ConditionTimeoutException ex) {
			return false;
		}
	}

	private static Map<String, String> answered(LoadClient.Load load) {
		Map<String, String> answered = new HashMap<>();
		for (LoadClient.Operation operation : load.operations()) {
			if (operation.paymentId != null) {
				answered.put(operation.key, operation.paymentId);
			}
		}
		return answered;
	}

	private static void assertClean(Checks.Findings findings, LoadClient.Load load) {
		assertThat(findings.clean()).as(findings.toString()).isTrue();
		assertThat(load.refused()).as("refused operations").isEmpty();
		assertThat(load.unanswered()).as("operations without a definitive answer").isEmpty();
	}

	private static KafkaProducer<String, String> producer() {
		return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.broker.bootstrapServers(),
				ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class, ProducerConfig.ACKS_CONFIG,
				"all"));
	}

	private static ProducerRecord<String, String> orderConfirmed(String orderId) {
		String eventId = UUID.randomUUID().toString();
		ProducerRecord<String, String> record = new ProducerRecord<>(Cluster.Topics.ORDERS_CONFIRMED, orderId,
				"{\"eventId\":\"" + eventId + "\",\"orderId\":\"" + orderId
						+ "\",\"totalAmount\":1.00,\"currency\":\"EUR\"}");
		record.headers().add("event-id", eventId.getBytes(StandardCharsets.UTF_8));
		return record;
	}

}
