package dev.idempotency.reliability;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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

import static dev.idempotency.reliability.Checks.assertClean;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The payments service as two real processes on a PostgreSQL and a Kafka broker of their
 * own, under retried load, while replicas, the consumer, the database and the broker are
 * killed and restarted. After each scenario: every payment charged once and by the
 * provider once, every outbox row published and in Kafka in its order's order, no claim
 * held past its lease, and the service serving again.
 * <p>
 * Scenarios 1 and 5 are {@link KillScenarios}, which {@link MariaDbFaultInjectionTests}
 * runs on MariaDB too. Short by default; {@code -Dreliability.long=true} for the long
 * run.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FaultInjectionTests {

	/** What the reaper logs when it returns rows whose lease ran out. */
	private static final String REAPED = "with an expired lease to PENDING";

	private static Cluster cluster;

	private static LoadClient client;

	private static Checks checks;

	private static RelayClaims relayClaims;

	private static KillScenarios killScenarios;

	@BeforeAll
	static void startCluster() {
		cluster = Cluster.get();
		client = new LoadClient(cluster);
		checks = new Checks(cluster);
		relayClaims = new RelayClaims(cluster);
		killScenarios = new KillScenarios(cluster);
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
		KillScenarios.ReplicaKills run = killScenarios.replicasKilledAtRandomMoments("kill-replica",
				"1. replica SIGKILL under retried HTTP load");
		assertClean(run.findings(), run.load());
	}

	@Test
	@Order(2)
	void consumerKilledBetweenItsCommitAndItsOffsetCommit() throws Exception {
		String prefix = "kill-consumer";
		int cycles = Cluster.longRun() ? 12 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		Set<String> orders = ConcurrentHashMap.newKeySet();
		CompletableFuture<Void> producer = produceOrders(prefix + "-order-", 40, stop, orders);
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
			cluster.postgres().stop();
			cluster.postgres().start();
		}
		for (int i = 0; i < kills; i++) {
			// A crash of the server: every backend gone at once, recovery from the WAL.
			Pause.randomly(Duration.ofMillis(500), Duration.ofSeconds(3));
			cluster.postgres().kill();
			cluster.postgres().start();
		}
		for (int i = 0; i < stops; i++) {
			Pause.randomly(Duration.ofSeconds(1), Duration.ofSeconds(3));
			cluster.postgres().stop();
			// Down for 15 s: longer than the web lease, so claims made before it expire
			// while nothing can be written.
			Pause.briefly(Duration.ofSeconds(15));
			cluster.postgres().start();
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
	@Order(5)
	void relaysKilledWhileHoldingClaimsAndTwoRelaysDrainingOneBacklog() {
		KillScenarios.RelayKills run = killScenarios.relaysKilledWhileHoldingClaims("relay",
				"5. relay SIGKILLed holding claims, two relays draining one backlog");
		assertClean(run.findings(), run.load());
	}

	@Test
	@Order(9)
	void allFaultsTogetherUnderOneLoad() {
		String prefix = "soak";
		cluster.ensureReplicasUp();
		// Short: one cheap fault, so that the soak's own code stays exercised in seconds.
		Duration length = Cluster.longRun() ? Duration.ofMinutes(Long.getLong("reliability.soak-minutes", 8))
				: Duration.ZERO;
		List<SoakFault> kinds = Cluster.longRun() ? List.of(SoakFault.values()) : List.of(SoakFault.POSTGRES_RESTART);
		AtomicBoolean stop = new AtomicBoolean();
		Set<String> orders = ConcurrentHashMap.newKeySet();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		CompletableFuture<Void> producer = produceOrders(prefix + "-kafka-order-", 10, stop, orders);
		Map<SoakFault, Integer> injected = new java.util.EnumMap<>(SoakFault.class);
		Set<Long> held = new java.util.HashSet<>();
		Set<Long> orphaned = new java.util.HashSet<>();
		long deadline = System.nanoTime() + length.toNanos();
		do {
			Pause.randomly(Duration.ofSeconds(1), Duration.ofSeconds(3));
			SoakFault fault = kinds.get(java.util.concurrent.ThreadLocalRandom.current().nextInt(kinds.size()));
			fault.inject(prefix, held, orphaned);
			injected.merge(fault, 1, Integer::sum);
		}
		while (System.nanoTime() < deadline);
		Pause.briefly(Duration.ofSeconds(2));
		stop.set(true);
		LoadClient.Load done = load.join();
		producer.join();
		cluster.ensureReplicasUp();
		await().atMost(Duration.ofMinutes(3))
			.pollInterval(Duration.ofMillis(500))
			.until(() -> cluster.database.count("SELECT count(DISTINCT order_id) FROM payment WHERE order_id LIKE ?",
					prefix + "-kafka-order-%") >= orders.size());
		Checks.Findings findings = checks.check(prefix, answered(done), orders);
		checks.checkPublished(held, findings);
		boolean restarted = injected.containsKey(SoakFault.REPLICA_KILL) || injected.containsKey(SoakFault.RELAY_KILL);
		boolean recovered = restarted
				|| servesAgainWithoutRestart(prefix, cluster.replicas.stream().map(Replica::pid).toList());
		String faults = injected.entrySet()
			.stream()
			.map((entry) -> entry.getValue() + " " + entry.getKey().description)
			.collect(java.util.stream.Collectors.joining(", "));
		Summary
			.add(Summary.Row
				.of("10. soak: all faults at random under HTTP and Kafka load, " + length.toMinutes() + " min",
						done.operations().size() + orders.size(),
						faults + " (" + held.size() + " claims held at relay kills, " + orphaned.size()
								+ " taken over)",
						findings, done.unanswered().size(),
						restarted ? "yes (replicas restarted)" : (recovered ? "yes" : "NO")));
		assertClean(findings, done);
		assertThat(recovered).as("both replicas serve again").isTrue();
	}

	@Test
	@Order(11)
	void brokerRefusesEveryRecordOfATopicForAWhileAndTheirRowsAreDeadAtOnceUntilRedriven() {
		String prefix = "refused";
		int cycles = Cluster.longRun() ? 5 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		long replacedBefore = producerReplacements();
		long reapsBefore = relayLogLines(REAPED).size();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		Checks.Findings flow = new Checks.Findings();
		for (int i = 0; i < cycles; i++) {
			Pause.randomly(Duration.ofSeconds(2), Duration.ofSeconds(4));
			// Smaller than any record: the broker refuses every one, for longer than a
			// send's bound, so that a producer that batched above the new limit before it
			// read it is replaced within the window.
			cluster.broker.setTopicConfig(Cluster.Topics.PAYMENTS_CHARGED, "max.message.bytes", "100");
			Pause.briefly(REFUSAL);
			cluster.broker.setTopicConfig(Cluster.Topics.PAYMENTS_CHARGED, "max.message.bytes", null);
			// The provider's rows of the same payments went on meanwhile.
			long behind = cluster.database.count(
					"SELECT count(*) FROM outbox WHERE message_key LIKE ? AND destination"
							+ " <> ? AND status <> 'PUBLISHED' AND created_at < now() - ? * interval '1 millisecond'",
					prefix + "-%", Cluster.Topics.PAYMENTS_CHARGED, REFUSAL.toMillis());
			if (behind > 0) {
				flow.stuck(behind + " provider rows held up while the broker refused the topic's records");
			}
		}
		Pause.briefly(Duration.ofSeconds(2));
		stop.set(true);
		LoadClient.Load done = load.join();
		List<Map<String, Object>> dead = cluster.database.query(
				"SELECT id, destination, attempts, last_error FROM outbox WHERE message_key LIKE ? AND status = 'DEAD'",
				prefix + "-%");
		List<String> failures = relayLogLines(" failed (send ");
		long reaped = relayLogLines(REAPED).size() - reapsBefore;
		for (Map<String, Object> row : dead) {
			if (!Cluster.Topics.PAYMENTS_CHARGED.equals(row.get("destination"))
					|| !String.valueOf(row.get("last_error")).contains("RecordTooLargeException")) {
				flow.stuck("a row DEAD for another reason: " + row);
			}
			String failedRow = "Outbox row " + row.get("id") + " to ";
			List<String> earlier = failures.stream().filter((line) -> line.contains(failedRow)).toList();
			// A refusal makes the row DEAD at once: it is never a failure to retry.
			earlier.stream()
				.filter((line) -> line.contains("RecordTooLargeException"))
				.forEach((line) -> flow.stuck("a refused row was retried: " + line));
			// Its other sends each ended in a failure to retry (a send its producer left
			// unresolved, or that the loaded broker did not answer in time), or in a
			// lease
			// that ran out on a relay too slow under load and was reaped.
			int sends = ((Number) row.get("attempts")).intValue();
			if (sends > 1 + earlier.size() + reaped) {
				flow.stuck("a refused row was sent " + sends + " times, " + earlier.size()
						+ " failures to retry logged for it and " + reaped + " reaps of leases");
			}
		}
		long replaced = producerReplacements() - replacedBefore;
		// Once the topic takes them again, as an operator would.
		int redriven = cluster.database.update(
				"UPDATE outbox SET status = 'PENDING', attempts_before_redrive = attempts,"
						+ " available_at = now(), last_error = NULL WHERE message_key LIKE ? AND status = 'DEAD'",
				prefix + "-%");
		cluster.ensureReplicasUp();
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of());
		flow.stuck.forEach(findings::stuck);
		Summary.add(
				Summary.Row
					.of("12. broker refuses every record of a topic for " + REFUSAL.toSeconds() + " s",
							done.operations().size(),
							cycles + " refusals (" + dead.size() + " rows DEAD at their refusal, re-driven: " + redriven
									+ "; " + replaced + " producers replaced)",
							findings, done.unanswered().size(), "yes"));
		assertClean(findings, done);
		assertThat(dead).as("rows refused by the broker").isNotEmpty();
	}

	@Test
	@Order(10)
	void relayProducersWhoseNetworkThreadDiesAreReplacedWithinTheirSendsBound() {
		String prefix = "producer-death";
		int cycles = Cluster.longRun() ? 10 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		long replacedBefore = producerReplacements();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> client.run(prefix, 6, stop));
		for (int i = 0; i < cycles; i++) {
			Pause.randomly(Duration.ofSeconds(1), Duration.ofSeconds(3));
			killProducer(cluster.randomReplica(), replacedBefore + i);
		}
		Pause.briefly(Duration.ofSeconds(2));
		stop.set(true);
		LoadClient.Load done = load.join();
		cluster.ensureReplicasUp();
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of());
		long dead = cluster.database.count("SELECT count(*) FROM outbox WHERE message_key LIKE ? AND status = 'DEAD'",
				prefix + "-%");
		if (dead > 0) {
			findings.stuck(dead + " rows DEAD after a producer died");
		}
		long replaced = producerReplacements() - replacedBefore;
		Summary.add(Summary.Row.of("11. relays' producers die (network thread killed) and are replaced",
				done.operations().size(), cycles + " producer deaths (" + replaced + " producers replaced)", findings,
				done.unanswered().size(), "yes"));
		assertClean(findings, done);
		assertThat(replaced).as("producers replaced after they died").isEqualTo(cycles);
	}

	/**
	 * Kill the network thread of a replica's relay producer at its next acknowledgement,
	 * and wait until the relay has replaced it (its log says so).
	 */
	private static void killProducer(Replica victim, long replacedBefore) {
		victim.killProducer();
		await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(200)).until(victim::producerKilled);
		await().atMost(Duration.ofMinutes(1))
			.pollInterval(Duration.ofMillis(500))
			.until(() -> producerReplacements() > replacedBefore);
	}

	/** How long a topic refuses records: longer than a send's bound (6 s). */
	private static final Duration REFUSAL = Duration.ofSeconds(10);

	/**
	 * How many times the replicas' relays replaced a broken producer so far, by their
	 * logs (which keep every start of a replica).
	 */
	/**
	 * The lines of the replicas' logs (every start of each) that contain a text.
	 */
	private static List<String> relayLogLines(String text) {
		List<String> lines = new ArrayList<>();
		for (Replica replica : cluster.replicas) {
			try {
				java.nio.file.Files.readString(replica.log(), StandardCharsets.ISO_8859_1)
					.lines()
					.filter((line) -> line.contains(text))
					.forEach(lines::add);
			}
			catch (java.io.IOException ex) {
				// A replica without a log yet logged nothing.
			}
		}
		return lines;
	}

	private static long producerReplacements() {
		return relayLogLines("producer did not resolve records").size();
	}

	/**
	 * The faults of the soak, each the building block of its own scenario, injected one
	 * after the other in a random order while the load runs.
	 */
	enum SoakFault {

		REPLICA_KILL("replica SIGKILLs (web, consumer and relay with it)") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				Replica victim = cluster.randomReplica();
				victim.kill();
				victim.start();
				victim.awaitUp(Cluster.STARTUP);
			}
		},

		RELAY_KILL("relay SIGKILLs amid claims (broker frozen)") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				Replica victim = cluster.randomReplica();
				RelayClaims.Kill kill = relayClaims.killAmidClaims(victim, prefix);
				held.addAll(kill.claims().keySet());
				orphaned.addAll(relayClaims.awaitReleased(kill, Replica.RELAY_LEASE.plusMinutes(1)));
				victim.start();
				victim.awaitUp(Cluster.STARTUP);
			}
		},

		POSTGRES_RESTART("PostgreSQL restarts") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				cluster.postgres().stop();
				cluster.postgres().start();
			}
		},

		POSTGRES_KILL("PostgreSQL SIGKILLs") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				cluster.postgres().kill();
				cluster.postgres().start();
			}
		},

		BROKER_KILL("broker SIGKILLs") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				cluster.broker.kill();
				// Sometimes down for longer than the relay's lease.
				Pause.randomly(Duration.ofSeconds(1), Replica.RELAY_LEASE.plusSeconds(3));
				cluster.broker.start(Cluster.STARTUP);
			}
		},

		BROKER_REFUSES("refusals of every record of a topic (scenario 12, DEAD rows re-driven)") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				cluster.broker.setTopicConfig(Cluster.Topics.PAYMENTS_CHARGED, "max.message.bytes", "100");
				Pause.briefly(REFUSAL);
				cluster.broker.setTopicConfig(Cluster.Topics.PAYMENTS_CHARGED, "max.message.bytes", null);
				cluster.database.update("UPDATE outbox SET status = 'PENDING', attempts_before_redrive = attempts,"
						+ " available_at = now(), last_error = NULL WHERE message_key LIKE ? AND status = 'DEAD'",
						prefix + "-%");
			}
		},

		PRODUCER_DEATH("relay producers killed (scenario 11)") {
			@Override
			void inject(String prefix, Set<Long> held, Set<Long> orphaned) {
				killProducer(cluster.randomReplica(), producerReplacements());
			}
		};

		final String description;

		SoakFault(String description) {
			this.description = description;
		}

		abstract void inject(String prefix, Set<Long> held, Set<Long> orphaned);

	}

	/**
	 * Send confirmed orders until {@code stop} is set (and at least {@code atLeast}).
	 * Each record is sent again, the same, until the broker acknowledges it, so that a
	 * broker down for a while delays the load instead of ending it; an order counts once
	 * acknowledged.
	 */
	private static CompletableFuture<Void> produceOrders(String orderPrefix, int atLeast, AtomicBoolean stop,
			Set<String> orders) {
		return CompletableFuture.runAsync(() -> {
			try (KafkaProducer<String, String> kafka = producer()) {
				for (int n = 0; n < atLeast || !stop.get(); n++) {
					String orderId = orderPrefix + n;
					ProducerRecord<String, String> record = orderConfirmed(orderId);
					while (!orders.contains(orderId)) {
						try {
							kafka.send(record).get(30, TimeUnit.SECONDS);
							orders.add(orderId);
						}
						catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException
								| org.apache.kafka.common.KafkaException ex) {
							Pause.briefly(Duration.ofMillis(500));
						}
					}
					Pause.briefly(Duration.ofMillis(100));
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
		});
	}

	@Test
	@Order(6)
	void oneHundredConcurrentRequestsWithOneKeyOnBothReplicas() throws Exception {
		race("same-key", cluster.replicas, "6. 100 concurrent requests, one key, both replicas");
	}

	@Test
	@Order(6)
	void oneHundredConcurrentRequestsWithOneKeyOnTwoReplicasInSingleTransactionMode() throws Exception {
		List<Replica> pair = List.of(
				cluster.extraReplica("replica-s1", List.of("--idempotency.web.mode=single-transaction")),
				cluster.extraReplica("replica-s2", List.of("--idempotency.web.mode=single-transaction")));
		try {
			// Both at once: the schema is there already, and the machine is the bound.
			pair.forEach(Replica::start);
			for (Replica replica : pair) {
				replica.awaitUp(Cluster.STARTUP);
			}
			race("single-tx", pair, "6. 100 concurrent requests, one key, two replicas, single-transaction mode");
		}
		finally {
			pair.forEach(Replica::kill);
		}
	}

	private static void race(String prefix, List<Replica> replicas, String scenario) throws Exception {
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
						client.pay(operation, replicas);
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
		Summary.add(Summary.Row.of(scenario, operations, rounds + " races of 100", findings, unanswered, "n/a"));
		assertThat(findings.clean()).as(findings.toString()).isTrue();
		assertThat(unanswered).isZero();
	}

	@Test
	@Order(7)
	void retentionCleanupWithShortRetentionWhileClaimsAreTakenOver() throws Exception {
		String prefix = "retention";
		int cycles = Cluster.longRun() ? 10 : 1;
		int handlers = 6;
		// Its keys expire 20 s after their claim: a claim of a killed handler is taken
		// over after the 10 s lease, or, once expired, deleted and made again, while
		// every replica's cleanup deletes expired keys every 2 s. Its payments from 1000
		// on wait in the review long enough to be killed there.
		Replica held = cluster.extraReplica("replica-c",
				List.of("--idempotency.web.retention=20s",
						"--idempotency.outbound.providers.payment-provider.key-ttl=20s",
						"--payments.review.threshold=1000", "--payments.review.hold=60s"));
		Map<String, String> answered = new HashMap<>();
		int operations = 0;
		int unanswered = 0;
		int kills = 0;
		HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
		ExecutorService executor = Executors.newFixedThreadPool(handlers);
		try {
			for (int cycle = 0; cycle < cycles; cycle++) {
				held.start();
				held.awaitUp(Cluster.STARTUP);
				List<LoadClient.Operation> racers = new ArrayList<>();
				for (int i = 0; i < handlers; i++) {
					String orderId = prefix + "-order-" + cycle + "-" + i;
					LoadClient.Operation operation = new LoadClient.Operation(prefix + "-key-" + cycle + "-" + i,
							orderId, 5000);
					racers.add(operation);
					http.sendAsync(HttpRequest.newBuilder(held.uri("/payments"))
						.header("Content-Type", "application/json")
						.header("Idempotency-Key", operation.key)
						.POST(HttpRequest.BodyPublishers.ofString("{\"orderId\":\"" + orderId + "\",\"amount\":"
								+ operation.amount() + ",\"currency\":\"EUR\"}"))
						.build(), HttpResponse.BodyHandlers.discarding());
				}
				String cycleKeys = prefix + "-key-" + cycle + "-%";
				await().atMost(Duration.ofMinutes(1))
					.pollInterval(Duration.ofMillis(200))
					.until(() -> cluster.database.count(
							"SELECT count(*) FROM idempotency_key WHERE idempotency_key LIKE ? AND status = 'IN_PROGRESS'",
							cycleKeys) == handlers);
				// Every handler is in the review, its key claimed: none has charged.
				held.kill();
				kills++;
				List<java.util.concurrent.Future<?>> retries = new ArrayList<>();
				for (LoadClient.Operation racer : racers) {
					retries.add(executor.submit(() -> client.pay(racer)));
				}
				for (java.util.concurrent.Future<?> retry : retries) {
					retry.get(5, TimeUnit.MINUTES);
				}
				operations += racers.size();
				for (LoadClient.Operation racer : racers) {
					if (racer.paymentId != null) {
						answered.put(racer.key, racer.paymentId);
					}
					else {
						unanswered++;
					}
				}
			}
		}
		finally {
			executor.shutdownNow();
			held.kill();
		}
		Checks.Findings findings = checks.check(prefix, answered, Set.of());
		Summary.add(Summary.Row.of(
				"7. retention cleanup (20 s retention, every 2 s) while killed handlers' claims are taken over",
				operations, kills + " replica SIGKILLs with " + handlers + " handlers each in flight", findings,
				unanswered, "n/a (restarted)"));
		assertThat(findings.clean()).as(findings.toString()).isTrue();
		assertThat(unanswered).isZero();
		assertThat(answered).hasSize(operations);
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
		List<ShutdownPhases> phases = new ArrayList<>();
		for (int i = 0; i < cycles; i++) {
			Pause.randomly(Duration.ofSeconds(2), Duration.ofSeconds(5));
			Replica replica = cluster.replicas.get(i % cluster.replicas.size());
			long logged = logSize(replica);
			java.time.Instant sigterm = java.time.Instant.now();
			Duration exit = replica.terminate(budget.plusSeconds(30));
			exits.add(exit);
			phases.add(ShutdownPhases.read(replica.log(), logged, sigterm, exit));
			replica.start();
			replica.awaitUp(Cluster.STARTUP);
		}
		stop.set(true);
		LoadClient.Load done = load.join();
		cluster.ensureReplicasUp();
		Checks.Findings findings = checks.check(prefix, answered(done), Set.of());
		Duration longest = exits.stream().max(Duration::compareTo).orElse(Duration.ZERO);
		String order = ShutdownPhases.summary(phases);
		System.out.println("Shutdown phases after SIGTERM (ms): " + phases);
		Summary.add(Summary.Row.of(
				"8. replica SIGTERM under load", done.operations().size(), cycles + " SIGTERMs, longest exit "
						+ longest.toMillis() + " ms, " + done.serverErrors() + " 5xx answers; " + order,
				findings, done.unanswered().size(), "n/a (restarted)"));
		assertClean(findings, done);
		assertThat(longest).as("exit after SIGTERM").isLessThan(budget);
	}

	private static long logSize(Replica replica) {
		try {
			return java.nio.file.Files.size(replica.log());
		}
		catch (java.io.IOException ex) {
			return 0;
		}
	}

	/**
	 * When each documented step of a shutdown happened, in milliseconds after the
	 * SIGTERM, from the replica's log (-1 when its line is missing): the web server stops
	 * accepting and waits for its requests, the Kafka listener container stops, the web
	 * server's requests are done, the connection pool closes (the relay stopped in the
	 * phase before it), the process exits.
	 */
	record ShutdownPhases(long webCommencing, long consumerStopped, long webComplete, long poolClosed, long exit) {

		private static final java.util.regex.Pattern TIME = java.util.regex.Pattern
			.compile("^(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d+(?:Z|[+-]\\d\\d:\\d\\d))");

		static ShutdownPhases read(java.nio.file.Path log, long from, java.time.Instant sigterm, Duration exit) {
			long[] at = { -1, -1, -1, -1 };
			String[] markers = { "Commencing graceful shutdown", "Consumer stopped", "Graceful shutdown complete",
					"Shutdown completed" };
			try {
				String text = java.nio.file.Files.readString(log, StandardCharsets.ISO_8859_1);
				for (String line : text.substring((int) Math.min(from, text.length())).split("\n")) {
					java.util.regex.Matcher time = TIME.matcher(line);
					if (!time.find()) {
						continue;
					}
					for (int m = 0; m < markers.length; m++) {
						if (at[m] < 0 && line.contains(markers[m])) {
							at[m] = Duration.between(sigterm, java.time.OffsetDateTime.parse(time.group(1)).toInstant())
								.toMillis();
						}
					}
				}
			}
			catch (java.io.IOException | java.time.format.DateTimeParseException ex) {
				// The figures are a report: missing ones stay -1.
			}
			return new ShutdownPhases(at[0], at[1], at[2], at[3], exit.toMillis());
		}

		boolean inDocumentedOrder() {
			return this.consumerStopped >= 0 && this.webCommencing >= this.consumerStopped
					&& this.webComplete >= this.webCommencing && this.poolClosed >= 0
					&& this.poolClosed >= this.webComplete && this.poolClosed >= this.consumerStopped
					&& this.exit >= this.poolClosed;
		}

		static String summary(List<ShutdownPhases> phases) {
			long inOrder = phases.stream().filter(ShutdownPhases::inDocumentedOrder).count();
			ShutdownPhases slowest = phases.stream()
				.max(java.util.Comparator.comparingLong(ShutdownPhases::exit))
				.orElse(new ShutdownPhases(-1, -1, -1, -1, -1));
			return inOrder + "/" + phases.size() + " in the documented order; slowest: web stops accepting at "
					+ slowest.webCommencing + " ms, Kafka listener stopped " + slowest.consumerStopped
					+ " ms, web requests done " + slowest.webComplete + " ms, pool closed after the relay "
					+ slowest.poolClosed + " ms, exit " + slowest.exit + " ms";
		}

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
		return load.paymentIds();
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
