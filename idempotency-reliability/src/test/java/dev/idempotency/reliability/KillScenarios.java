package dev.idempotency.reliability;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The scenarios that run on every database the library supports, each on the cluster it
 * is given: replicas SIGKILLed at random moments under retried load, and relays SIGKILLed
 * while holding claims. Each adds its row to the {@link Summary} and returns what
 * happened, for its test to assert.
 */
class KillScenarios {

	private final Cluster cluster;

	private final LoadClient client;

	private final Checks checks;

	private final RelayClaims relayClaims;

	KillScenarios(Cluster cluster) {
		this.cluster = cluster;
		this.client = new LoadClient(cluster);
		this.checks = new Checks(cluster);
		this.relayClaims = new RelayClaims(cluster);
	}

	/**
	 * A killer per replica waits 1 to 5 s, SIGKILLs its replica and starts it again,
	 * under six streams of retried payments; then the checks.
	 * @param prefix the scenario's prefix of keys and order ids
	 * @param scenario the scenario's name in the summary
	 * @return what happened
	 */
	ReplicaKills replicasKilledAtRandomMoments(String prefix, String scenario) {
		int cycles = Cluster.longRun() ? 20 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> this.client.run(prefix, 6, stop));
		int kills = Faults.killReplicas(this.cluster, cycles, Duration.ofSeconds(1), Duration.ofSeconds(5));
		stop.set(true);
		LoadClient.Load done = load.join();
		this.cluster.ensureReplicasUp();
		Checks.Findings findings = this.checks.check(prefix, done.paymentIds(), Set.of());
		Summary.add(Summary.Row.of(scenario, done.operations().size(), kills + " replica SIGKILLs", findings,
				done.unanswered().size(), "n/a (restarted)"));
		return new ReplicaKills(done, cycles * this.cluster.replicas.size(), kills, findings);
	}

	/**
	 * Under load, a random replica is SIGKILLed once both relays hold claims (the broker
	 * frozen meanwhile), its claims are watched until the survivor's reaper gives them
	 * back, never before their lease ended, and the replica is started again; then the
	 * checks, and every row held at a kill must be published with its key.
	 * @param prefix the scenario's prefix of keys and order ids
	 * @param scenario the scenario's name in the summary
	 * @return what happened
	 */
	RelayKills relaysKilledWhileHoldingClaims(String prefix, String scenario) {
		int cycles = Cluster.longRun() ? 12 : 1;
		AtomicBoolean stop = new AtomicBoolean();
		CompletableFuture<LoadClient.Load> load = CompletableFuture.supplyAsync(() -> this.client.run(prefix, 6, stop));
		Set<Long> held = new HashSet<>();
		Set<Long> orphaned = new HashSet<>();
		int kills = 0;
		int killsHolding = 0;
		for (int i = 0; i < cycles; i++) {
			Pause.randomly(Duration.ofSeconds(1), Duration.ofSeconds(3));
			Replica victim = this.cluster.randomReplica();
			RelayClaims.Kill kill = this.relayClaims.killAmidClaims(victim, prefix);
			kills++;
			held.addAll(kill.claims().keySet());
			if (kill.deadHeldClaims()) {
				killsHolding++;
			}
			orphaned.addAll(this.relayClaims.awaitReleased(kill, Replica.RELAY_LEASE.plusMinutes(1)));
			victim.start();
			victim.awaitUp(Cluster.STARTUP);
		}
		stop.set(true);
		LoadClient.Load done = load.join();
		this.cluster.ensureReplicasUp();
		Checks.Findings findings = this.checks.check(prefix, done.paymentIds(), Set.of());
		this.checks.checkPublished(held, findings);
		Summary.add(Summary.Row.of(scenario, done.operations().size(),
				kills + " replica SIGKILLs (" + killsHolding + " with the killed relay holding claims, " + held.size()
						+ " claims held at the kills, " + orphaned.size() + " taken over past their lease)",
				findings, done.unanswered().size(), "n/a (restarted)"));
		return new RelayKills(done, kills, killsHolding, Set.copyOf(held), Set.copyOf(orphaned), findings);
	}

	/**
	 * What came of replicas killed at random moments.
	 *
	 * @param load the clients' operations
	 * @param planned the kills the scenario set out to make
	 * @param kills the kills made
	 * @param findings what the checks found
	 */
	record ReplicaKills(LoadClient.Load load, int planned, int kills, Checks.Findings findings) {

	}

	/**
	 * What came of relays killed while holding claims.
	 *
	 * @param load the clients' operations
	 * @param kills the replicas killed
	 * @param killsHolding the kills at which the killed relay held claims
	 * @param held the outbox rows claimed at the kills, by either relay
	 * @param orphaned the killed relays' rows, taken over past their lease
	 * @param findings what the checks found
	 */
	record RelayKills(LoadClient.Load load, int kills, int killsHolding, Set<Long> held, Set<Long> orphaned,
			Checks.Findings findings) {

	}

}
