package dev.idempotency.reliability;

import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static dev.idempotency.reliability.Checks.assertClean;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The kill scenarios of {@link FaultInjectionTests} on MariaDB: the payments service as
 * two real processes on a database of their own on the test MariaDB and on a Kafka broker
 * of their own, replicas SIGKILLed at random moments under retried load, and a relay
 * SIGKILLed while it and the other relay hold claims. The same checks after each: every
 * payment charged once and by the provider once, every outbox row published and in Kafka
 * in its order's order, no claim held past its lease; and the faults struck, under load.
 */
@MariaDbTest
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MariaDbFaultInjectionTests {

	private static final String ON_MARIADB = ", on MariaDB";

	private static Cluster cluster;

	private static KillScenarios killScenarios;

	@BeforeAll
	static void startCluster(TestSchema schema) {
		cluster = Cluster.onMariaDb(schema);
		killScenarios = new KillScenarios(cluster);
	}

	@AfterAll
	static void stopCluster() {
		if (cluster != null) {
			cluster.close();
			Summary.print(Cluster.workRoot());
		}
	}

	@Test
	@Order(1)
	void replicasKilledAtRandomMomentsUnderRetriedLoad() {
		KillScenarios.ReplicaKills run = killScenarios.replicasKilledAtRandomMoments("kill-replica",
				"1. replica SIGKILL under retried HTTP load" + ON_MARIADB);
		assertClean(run.findings(), run.load());
		assertThat(run.kills()).as("replica SIGKILLs").isPositive().isEqualTo(run.planned());
		// Requests were in flight to a replica as it died or while it was down: the
		// clients had to retry.
		assertThat(run.load().attempts()).as("attempts of the clients").isGreaterThan(run.load().operations().size());
		assertThat(run.load().answered()).as("payments answered").isEqualTo(run.load().operations().size());
	}

	@Test
	@Order(2)
	void relaysKilledWhileHoldingClaimsAndTwoRelaysDrainingOneBacklog() {
		KillScenarios.RelayKills run = killScenarios.relaysKilledWhileHoldingClaims("relay",
				"5. relay SIGKILLed holding claims, two relays draining one backlog" + ON_MARIADB);
		assertClean(run.findings(), run.load());
		assertThat(run.kills()).as("replica SIGKILLs").isPositive();
		assertThat(run.killsHolding()).as("kills of a relay that held claims").isEqualTo(run.kills());
		assertThat(run.orphaned()).as("claims of the killed relay taken over past their lease").isNotEmpty();
		assertThat(run.load().answered()).as("payments answered").isEqualTo(run.load().operations().size());
	}

}
