package dev.idempotency.reliability;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static dev.idempotency.reliability.Checks.assertClean;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Scenario 1 of {@link FaultInjectionTests} with
 * {@code idempotency.jdbc.partitioning=daily}: the payments service as two real processes
 * whose key, processed-event and outbox tables are partitioned by day, replicas SIGKILLed
 * at random moments under retried load. The same checks after it: every payment charged
 * once and by the provider once, every outbox row published in its order's order, no
 * claim held past its lease.
 */
@PostgresTest
class PartitionedFaultInjectionTests {

	private static TestSchema schema;

	private static Cluster cluster;

	private static KillScenarios killScenarios;

	@BeforeAll
	static void startCluster(TestSchema testSchema) {
		schema = testSchema;
		cluster = Cluster.onPartitionedTables(testSchema);
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
	void replicasKilledAtRandomMomentsUnderRetriedLoadOnPartitionedTables() throws SQLException {
		assertThat(relkind("idempotency_key")).as("the key table").isEqualTo("p");
		assertThat(relkind("processed_event")).as("the processed-event table").isEqualTo("p");
		assertThat(relkind("outbox")).as("the outbox table").isEqualTo("p");
		KillScenarios.ReplicaKills run = killScenarios.replicasKilledAtRandomMoments("kill-replica-partitioned",
				"1. replica SIGKILL under retried HTTP load, on tables partitioned by day");
		assertClean(run.findings(), run.load());
		assertThat(run.kills()).as("replica SIGKILLs").isPositive().isEqualTo(run.planned());
		assertThat(run.load().attempts()).as("attempts of the clients").isGreaterThan(run.load().operations().size());
		assertThat(run.load().answered()).as("payments answered").isEqualTo(run.load().operations().size());
	}

	private static String relkind(String table) throws SQLException {
		try (Connection connection = schema.dataSource().getConnection();
				Statement statement = connection.createStatement();
				ResultSet rs = statement
					.executeQuery("SELECT relkind FROM pg_class WHERE oid = to_regclass('" + table + "')")) {
			return rs.next() ? rs.getString(1) : "missing";
		}
	}

}
