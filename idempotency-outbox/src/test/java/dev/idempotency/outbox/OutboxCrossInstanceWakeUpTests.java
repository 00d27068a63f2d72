package dev.idempotency.outbox;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Two instances of an application, each with a data source and a relay of its own, whose
 * relays poll once a minute: what one instance appends wakes the other's relay through
 * PostgreSQL's {@code LISTEN/NOTIFY}.
 */
@PostgresTest
class OutboxCrossInstanceWakeUpTests {

	private static final Duration POLL = Duration.ofSeconds(60);

	private final TestSchema schema;

	private final JdbcTemplate jdbc;

	OutboxCrossInstanceWakeUpTests(TestSchema schema) {
		this.schema = schema;
		this.jdbc = new JdbcTemplate(schema.dataSource());
	}

	@Test
	void anAppendCommittedOnOneInstanceIsPublishedByTheOtherInstancesRelayLongBeforeItsPoll() throws Exception {
		String table = "wake_across_outbox";
		DataSource instanceA = this.schema.dataSource();
		DataSource instanceB = this.schema.dataSource();
		OutboxTestSupport.createTable(instanceA, table);
		JdbcOutbox outboxA = notifyingOutbox(instanceA, table);
		CountDownLatch busy = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		// Relay A is busy with a slow delivery of another key: the commit's wake-up of
		// its
		// own instance finds it in a cycle that takes no other row.
		OutboxRelay relayA = OutboxRelay.builder(instanceA).name("relay-a").table(table).destination((messages, t) -> {
			busy.countDown();
			release.await();
			return Map.of();
		}).pollInterval(POLL).claimAhead(false).listen(true).build();
		CountDownLatch published = new CountDownLatch(1);
		CountDownLatch firstCycleOfB = new CountDownLatch(1);
		List<String> publishedByB = new CopyOnWriteArrayList<>();
		OutboxRelay relayB = OutboxRelay.builder(instanceB).name("relay-b").table(table).destination((messages, t) -> {
			messages.forEach((message) -> publishedByB.add(message.messageKey()));
			published.countDown();
			return Map.of();
		}).pollInterval(POLL).listen(true).hook(new RelayHook() {
			@Override
			public void afterCycle(int claimed) {
				firstCycleOfB.countDown();
			}
		}).build();
		relayA.start();
		try {
			outboxA.afterCommit(relayA::wakeUp);
			append(instanceA, outboxA, "slow");
			assertThat(busy.await(10, TimeUnit.SECONDS)).isTrue();
			relayB.start();
			awaitListening(relayB);
			assertThat(firstCycleOfB.await(10, TimeUnit.SECONDS)).isTrue();
			append(instanceA, outboxA, "o-1");
			assertThat(published.await(10, TimeUnit.SECONDS)).isTrue();
			assertThat(publishedByB).containsExactly("o-1");
			assertThat(relayB.listener().wakeUps()).isPositive();
		}
		finally {
			release.countDown();
			relayA.stop();
			relayB.stop();
		}
	}

	@Test
	void aListeningConnectionThatIsKilledIsReplacedAndWakesTheRelayAgain() throws Exception {
		String table = "wake_killed_outbox";
		DataSource instanceA = this.schema.dataSource();
		OutboxTestSupport.createTable(instanceA, table);
		JdbcOutbox outboxA = notifyingOutbox(instanceA, table);
		Set<String> delivered = ConcurrentHashMap.newKeySet();
		AtomicInteger cycles = new AtomicInteger();
		OutboxRelay relayB = OutboxRelay.builder(this.schema.dataSource())
			.name("relay-b")
			.table(table)
			.destination((messages, t) -> {
				messages.forEach((message) -> delivered.add(message.messageKey()));
				return Map.of();
			})
			.pollInterval(POLL)
			.listen(true)
			.hook(new RelayHook() {
				@Override
				public void afterCycle(int claimed) {
					cycles.incrementAndGet();
				}
			})
			.build();
		relayB.start();
		try {
			int first = awaitListening(relayB);
			append(instanceA, outboxA, "before");
			OutboxTestSupport.await(Duration.ofSeconds(10), "the first row is published",
					() -> delivered.contains("before"));
			int cyclesBefore = cycles.get();
			assertThat(this.jdbc.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, first)).isTrue();
			OutboxTestSupport.await(Duration.ofSeconds(10), "another connection listens",
					() -> relayB.listener().backendPid() != 0 && relayB.listener().backendPid() != first);
			// Listening again, the relay runs a cycle for what it may have missed; only
			// then is the next append up to the notification.
			OutboxTestSupport.await(Duration.ofSeconds(10), "the catch-up cycle", () -> cycles.get() > cyclesBefore);
			long wakeUps = relayB.listener().wakeUps();
			append(instanceA, outboxA, "after");
			OutboxTestSupport.await(Duration.ofSeconds(10), "the row appended after the kill is published",
					() -> delivered.contains("after"));
			assertThat(relayB.listener().wakeUps()).isGreaterThan(wakeUps);
		}
		finally {
			relayB.stop();
		}
	}

	@Test
	void onlyARelayThatListensHoldsAListeningConnectionAndGivesItBackWhenItStops() throws Exception {
		String listening = "wake_on_outbox";
		String polling = "wake_off_outbox";
		OutboxTestSupport.createTable(this.schema.dataSource(), listening);
		OutboxTestSupport.createTable(this.schema.dataSource(), polling);
		CountDownLatch polled = new CountDownLatch(1);
		OutboxRelay off = OutboxRelay.builder(this.schema.dataSource())
			.table(polling)
			.destination((messages, t) -> Map.of())
			.pollInterval(POLL)
			.hook(new RelayHook() {
				@Override
				public void afterCycle(int claimed) {
					polled.countDown();
				}
			})
			.build();
		OutboxRelay on = OutboxRelay.builder(this.schema.dataSource())
			.table(listening)
			.destination((messages, t) -> Map.of())
			.pollInterval(POLL)
			.listen(true)
			.build();
		off.start();
		on.start();
		try {
			assertThat(polled.await(10, TimeUnit.SECONDS)).isTrue();
			awaitListening(on);
			assertThat(off.listener()).isNull();
			assertThat(listeningBackends(polling)).isZero();
			assertThat(listeningBackends(listening)).isOne();
		}
		finally {
			off.stop();
			on.stop();
		}
		OutboxTestSupport.await(Duration.ofSeconds(10), "the listening connection is closed",
				() -> listeningBackends(listening) == 0);
	}

	@Test
	void aBurstOfTenThousandCommitsWakesTheRelayABoundedNumberOfTimes() throws Exception {
		String table = "wake_burst_outbox";
		OutboxTestSupport.createTable(this.schema.dataSource(), table);
		CountDownLatch gate = new CountDownLatch(1);
		CountDownLatch gated = new CountDownLatch(1);
		AtomicInteger delivered = new AtomicInteger();
		AtomicInteger cycles = new AtomicInteger();
		OutboxRelay relayB = OutboxRelay.builder(this.schema.dataSource()).table(table).destination((messages, t) -> {
			if (messages.stream().anyMatch((message) -> "gate".equals(message.messageKey()))) {
				gated.countDown();
				gate.await();
			}
			delivered.addAndGet(messages.size());
			return Map.of();
		}).pollInterval(POLL).listen(true).hook(new RelayHook() {
			@Override
			public void afterCycle(int claimed) {
				cycles.incrementAndGet();
			}
		}).build();
		relayB.start();
		try {
			awaitListening(relayB);
			DataSource instanceA = this.schema.dataSource();
			append(instanceA, notifyingOutbox(instanceA, table), "gate");
			assertThat(gated.await(10, TimeUnit.SECONDS)).isTrue();
			long wakeUpsBeforeTheBurst = relayB.listener().wakeUps();
			int threads = 4;
			int commits = 10_000;
			List<Thread> appenders = new ArrayList<>();
			List<SingleConnectionDataSource> connections = new ArrayList<>();
			for (int i = 0; i < threads; i++) {
				SingleConnectionDataSource connection = OutboxTestSupport.ownConnection(this.schema);
				connections.add(connection);
				JdbcOutbox outbox = notifyingOutbox(connection, table);
				Thread appender = new Thread(() -> {
					for (int n = 0; n < commits / threads; n++) {
						OutboxTestSupport.transactions(connection)
							.executeWithoutResult((status) -> outbox.append("orders", null, Map.of("burst", true)));
					}
				});
				appenders.add(appender);
				appender.start();
			}
			for (Thread appender : appenders) {
				appender.join();
			}
			connections.forEach(SingleConnectionDataSource::destroy);
			// How many times the notifications woke the busy relay depends on how the
			// driver batches them as they arrive, not on the library: more than once.
			OutboxTestSupport.await(Duration.ofSeconds(30), "the burst's notifications reach the listener",
					() -> relayB.listener().wakeUps() - wakeUpsBeforeTheBurst >= 2);
			int cyclesBeforeTheGateOpens = cycles.get();
			gate.countDown();
			OutboxTestSupport.await(Duration.ofSeconds(60), "the burst is published",
					() -> delivered.get() == commits + 1);
			// Ten thousand notifications, arriving while the relay was busy, made one
			// pending wake-up and a drain of a few batches.
			assertThat(cycles.get() - cyclesBeforeTheGateOpens).isLessThanOrEqualTo(30);
		}
		finally {
			gate.countDown();
			relayB.stop();
		}
	}

	@Test
	void aRelayWhoseConnectionsAreNotOfThePostgresDriverStopsListeningAndPolls() throws Exception {
		String table = "wake_proxy_outbox";
		OutboxTestSupport.createTable(this.schema.dataSource(), table);
		DataSource opaque = new DelegatingDataSource(this.schema.dataSource()) {
			@Override
			public Connection getConnection() throws SQLException {
				Connection target = super.getConnection();
				return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
						new Class<?>[] { Connection.class }, (proxy, method, args) -> switch (method.getName()) {
							case "isWrapperFor" -> false;
							case "unwrap" -> throw new SQLException("Not a wrapper");
							default -> {
								try {
									yield method.invoke(target, args);
								}
								catch (InvocationTargetException ex) {
									throw ex.getCause();
								}
							}
						});
			}
		};
		CountDownLatch published = new CountDownLatch(1);
		OutboxRelay relay = OutboxRelay.builder(opaque).table(table).destination((messages, t) -> {
			published.countDown();
			return Map.of();
		}).pollInterval(Duration.ofMillis(200)).listen(true).build();
		relay.start();
		try {
			OutboxTestSupport.await(Duration.ofSeconds(10), "the listener ends", () -> !relay.listener().isRunning());
			assertThat(relay.listener().backendPid()).isZero();
			DataSource instanceA = this.schema.dataSource();
			append(instanceA, notifyingOutbox(instanceA, table), "polled");
			assertThat(published.await(10, TimeUnit.SECONDS)).isTrue();
			assertThat(relay.isRunning()).isTrue();
		}
		finally {
			relay.stop();
		}
	}

	@Test
	void theChannelOfATableIsAnIdentifierOfAtMost63BytesDistinctPerTable() {
		assertThat(OutboxStatements.channel("Outbox")).isEqualTo("idempotency:outbox");
		assertThat(OutboxStatements.channel("app.outbox")).isEqualTo("idempotency:app.outbox");
		String schemaName = "s".repeat(63);
		String first = OutboxStatements.channel(schemaName + ".outbox_one");
		String second = OutboxStatements.channel(schemaName + ".outbox_two");
		assertThat(first).hasSize(63).startsWith("idempotency:sss").isNotEqualTo(second);
		assertThat(OutboxStatements.channel(schemaName + ".outbox_one")).isEqualTo(first);
		assertThatIllegalArgumentException().isThrownBy(() -> OutboxStatements.channel("outbox\"; NOTIFY x; --"));
	}

	private static JdbcOutbox notifyingOutbox(DataSource dataSource, String table) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(dataSource, table);
		outbox.setNotifyRelays(true);
		return outbox;
	}

	private static void append(DataSource dataSource, JdbcOutbox outbox, String key) {
		OutboxTestSupport.transactions(dataSource)
			.executeWithoutResult((status) -> outbox.append("orders", key, Map.of("key", key)));
	}

	private static int awaitListening(OutboxRelay relay) {
		RelayListener listener = relay.listener();
		assertThat(listener).isNotNull();
		OutboxTestSupport.await(Duration.ofSeconds(10), "the relay listens", () -> listener.backendPid() != 0);
		return listener.backendPid();
	}

	private int listeningBackends(String table) {
		return this.jdbc.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE query = ?", Integer.class,
				"LISTEN \"" + OutboxStatements.channel(table) + "\"");
	}

}
