package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Every send of a row after its first is known to be a re-send, whatever interrupted the
 * first: a status-first provider is asked before it, and a row whose sends never come to
 * an end is given up on after the maximum attempts.
 */
@PostgresTest
class OutboxResendTests {

	private static final Duration LEASE = Duration.ofMillis(500);

	private final TestSchema schema;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	private final ChargeProvider provider;

	OutboxResendTests(TestSchema schema) throws Exception {
		this.schema = schema;
		this.dataSource = schema.dataSource();
		this.jdbc = new JdbcTemplate(this.dataSource);
		this.provider = new ChargeProvider();
	}

	@AfterEach
	void closeProvider() {
		this.provider.close();
	}

	@Test
	void aRowSentAgainAfterTheRelayDiedBetweenSendAndMarkAsksTheStatusFirstAndIsNotChargedTwice() {
		String table = "resend_after_crash_outbox";
		long id = appendCharge(table, "evt-crash");
		OutboxRelay dying = relayBuilder(table, this.dataSource).hook(new RelayHook() {
			@Override
			public void afterDelivery(List<OutboxMessage> claimed) {
				throw new KafkaOutboxRelayTests.RelayKilled();
			}
		}).build();
		assertThatExceptionOfType(KafkaOutboxRelayTests.RelayKilled.class).isThrownBy(dying::runOnce);
		assertThat(status(table, id)).isEqualTo("PUBLISHING");

		deliverAfterTheLease(table);
		assertThat(status(table, id)).isEqualTo("PUBLISHED");
		assertThat(this.provider.chargeRequests()).as("charge requests").isEqualTo(1);
		assertThat(this.provider.statusRequests()).as("status lookups").isEqualTo(1);
		assertThat(attempts(table, id)).isEqualTo(2);
	}

	@Test
	void aRowSentAgainAfterItsPublishedMarkFailedAsksTheStatusFirst() {
		String table = "resend_after_failed_mark_outbox";
		long id = appendCharge(table, "evt-mark");
		SingleConnectionDataSource relayConnection = OutboxTestSupport.ownConnection(this.schema);
		try {
			Integer pid = new JdbcTemplate(relayConnection).queryForObject("SELECT pg_backend_pid()", Integer.class);
			OutboxRelay cut = relayBuilder(table, relayConnection).hook(new RelayHook() {
				@Override
				public void afterDelivery(List<OutboxMessage> claimed) {
					OutboxResendTests.this.jdbc.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, pid);
				}
			}).build();
			assertThat(catchThrowable(cut::runOnce)).as("the mark on a cut connection").isNotNull();
		}
		finally {
			relayConnection.destroy();
		}
		assertThat(status(table, id)).isEqualTo("PUBLISHING");

		deliverAfterTheLease(table);
		assertThat(status(table, id)).isEqualTo("PUBLISHED");
		assertThat(this.provider.chargeRequests()).as("charge requests").isEqualTo(1);
		assertThat(this.provider.statusRequests()).as("status lookups").isEqualTo(1);
	}

	@Test
	void aRowRedrivenFromDeadAsksTheStatusFirst() {
		String table = "resend_after_redrive_outbox";
		long id = appendCharge(table, "evt-redrive");
		this.provider.holdResponsesAfterCharging(1);
		OutboxRelay relay = relayBuilder(table, this.dataSource).maxAttempts(1).build();
		assertThat(relay.runOnce()).isEqualTo(1);
		assertThat(status(table, id)).as("charged, but the answer never came").isEqualTo("DEAD");

		assertThat(new OutboxDeadRows(this.jdbc, table).redrive(id)).isTrue();
		// A lease that a status lookup and a charge fit in on a busy machine.
		OutboxRelay redriven = relayBuilder(table, this.dataSource).lease(Duration.ofSeconds(30)).build();
		assertThat(redriven.runOnce()).isEqualTo(1);
		assertThat(status(table, id)).isEqualTo("PUBLISHED");
		assertThat(this.provider.chargeRequests()).as("charge requests").isEqualTo(1);
		assertThat(this.provider.statusRequests()).as("status lookups").isEqualTo(1);
	}

	@Test
	void aBatchHandedBackOnShutdownCountsItsSendSoThatTheNextSendIsAResend() throws Exception {
		String table = "resend_after_hand_back_outbox";
		long id = appendCharge(table, "evt-stop");
		CountDownLatch inFlight = new CountDownLatch(1);
		OutboxRelay stopping = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			inFlight.countDown();
			new CountDownLatch(1).await();
			return Map.of();
		}).shutdownTimeout(Duration.ofMillis(100)).build();
		stopping.start();
		assertThat(inFlight.await(10, TimeUnit.SECONDS)).isTrue();
		stopping.stop();
		assertThat(status(table, id)).isEqualTo("PENDING");

		List<Integer> earlierAttempts = new CopyOnWriteArrayList<>();
		OutboxRelay next = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			messages.forEach((message) -> earlierAttempts.add(message.attempts()));
			return Map.of();
		}).build();
		assertThat(next.runOnce()).isEqualTo(1);
		assertThat(earlierAttempts).as("earlier sends of the row, as the destination sees them").containsExactly(1);
	}

	@Test
	void aRowWhoseSendsKeepKillingTheRelayIsDeadAfterTheMaximumAttemptsInsteadOfReapedForever() {
		String table = "resend_crash_loop_outbox";
		long id = appendCharge(table, "evt-loop");
		List<Long> sends = new CopyOnWriteArrayList<>();
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			messages.forEach((message) -> sends.add(message.id()));
			throw new KafkaOutboxRelayTests.RelayKilled();
		}).lease(LEASE).maxAttempts(3).build();
		for (int cycle = 0; cycle < 8 && !"DEAD".equals(status(table, id)); cycle++) {
			catchThrowable(relay::runOnce);
			if ("PUBLISHING".equals(status(table, id))) {
				OutboxTestSupport.await(Duration.ofSeconds(10), "the lease expires", () -> relay.reap() > 0);
			}
		}
		assertThat(status(table, id)).isEqualTo("DEAD");
		assertThat(sends).as("sends").hasSize(3);
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE id = ?", String.class, id))
			.contains("3");
	}

	private void deliverAfterTheLease(String table) {
		OutboxRelay survivor = relayBuilder(table, this.dataSource).build();
		OutboxTestSupport.await(Duration.ofSeconds(10), "the lease expires", () -> survivor.reap() > 0);
		assertThat(survivor.runOnce()).isEqualTo(1);
	}

	private OutboxRelayBuilder relayBuilder(String table, DataSource relayDataSource) {
		return OutboxRelay.builder(relayDataSource)
			.table(table)
			.destination(new HttpOutboxDestination(ChargeProvider.PROVIDER::equals,
					this.provider.sender(Duration.ofSeconds(1)), ChargeProvider.statusFirstCalls(),
					ChargeProvider.PROVIDER, this.provider.statusCheck()))
			.lease(LEASE)
			.backoff(Duration.ZERO, Duration.ZERO);
	}

	private long appendCharge(String table, String eventId) {
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox.append(OutboxEvent.to(ChargeProvider.PROVIDER)
				.key("order-1")
				.payload(Map.of("amount", 100))
				.eventId(eventId)
				.build()));
		return OutboxTestSupport.id(this.dataSource, table, eventId);
	}

	private String status(String table, long id) {
		return this.jdbc.queryForObject("SELECT status FROM " + table + " WHERE id = ?", String.class, id);
	}

	private int attempts(String table, long id) {
		return this.jdbc.queryForObject("SELECT attempts FROM " + table + " WHERE id = ?", Integer.class, id);
	}

}
