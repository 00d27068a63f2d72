package dev.idempotency.outbox;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.idempotency.outbound.OutboundCalls;
import dev.idempotency.outbound.OutboundOperation;
import dev.idempotency.outbound.ProviderPolicy;
import dev.idempotency.outbound.ProviderStatus;
import dev.idempotency.outbound.ProviderStatusCheck;
import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.http.RestClientOutboxSender;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class HttpOutboxDestinationTests {

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	private final HttpServer server;

	private final List<String> receivedKeys = new CopyOnWriteArrayList<>();

	private final List<String> receivedBodies = new CopyOnWriteArrayList<>();

	private final AtomicInteger failuresLeft = new AtomicInteger();

	private volatile int failureStatus = 503;

	HttpOutboxDestinationTests(DataSource dataSource) throws IOException {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
		this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
		this.server.createContext("/charges", this::handle);
		this.server.start();
	}

	@AfterEach
	void stopServer() {
		this.server.stop(0);
	}

	private void handle(HttpExchange exchange) throws IOException {
		this.receivedKeys.add(exchange.getRequestHeaders().getFirst("Idempotency-Key"));
		this.receivedBodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
		int status = (this.failuresLeft.getAndDecrement() > 0) ? this.failureStatus : 201;
		exchange.sendResponseHeaders(status, -1);
		exchange.close();
	}

	@Test
	void providerReceivesTheSameIdempotencyKeyOnEveryRetryUntilItAccepts() {
		String table = "http_retry_outbox";
		this.failuresLeft.set(2);
		OutboxRelay relay = relay(table, Duration.ofMinutes(5));
		long id = appendCharge(table, "evt-charge-1");
		OutboxTestSupport.await(Duration.ofSeconds(10), "the charge is published", () -> {
			relay.runOnce();
			return "PUBLISHED".equals(status(table, id));
		});
		assertThat(this.receivedKeys).hasSize(3).containsOnly(OutboxEvent.deriveIdempotencyKey("evt-charge-1"));
		assertThat(this.receivedBodies).containsOnly("{\"amount\":100}");
		assertThat(this.jdbc.queryForObject("SELECT attempts FROM " + table + " WHERE id = ?", Integer.class, id))
			.as("sends")
			.isEqualTo(3);
	}

	@Test
	void pastTheMaximumAgeTheRowIsDeadAndTheProviderIsNotCalledAgain() {
		String table = "http_expiry_outbox";
		this.failuresLeft.set(Integer.MAX_VALUE);
		OutboxRelay relay = relay(table, Duration.ofSeconds(2));
		long id = appendCharge(table, "evt-charge-2");
		OutboxTestSupport.await(Duration.ofSeconds(10), "the charge is DEAD", () -> {
			relay.runOnce();
			return "DEAD".equals(status(table, id));
		});
		int calls = this.receivedKeys.size();
		assertThat(calls).isPositive();
		assertThat(this.receivedKeys).containsOnly(OutboxEvent.deriveIdempotencyKey("evt-charge-2"));
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE id = ?", String.class, id))
			.contains("maximum age");
		assertThat(this.jdbc.queryForObject(
				"SELECT created_at + interval '2 seconds' <= now() FROM " + table + " WHERE id = ?", Boolean.class, id))
			.isTrue();
		for (int i = 0; i < 3; i++) {
			relay.runOnce();
		}
		assertThat(this.receivedKeys).hasSize(calls);
	}

	@Test
	void pastTheProviderKeyTtlTheRowIsDeadAtOnceAndTheProviderIsNotCalled() {
		String table = "http_key_ttl_outbox";
		OutboundCalls calls = new OutboundCalls(Map.of("payments",
				new ProviderPolicy(Duration.ofHours(24), false, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
		OutboxRelay relay = relay(table, new HttpOutboxDestination("payments", sender(), calls, "payments"));
		long id = appendCharge(table, "evt-charge-3");
		this.jdbc.update("UPDATE " + table + " SET created_at = now() - interval '25 hours' WHERE id = ?", id);
		relay.runOnce();
		assertThat(status(table, id)).isEqualTo("DEAD");
		assertThat(this.jdbc.queryForObject("SELECT attempts FROM " + table + " WHERE id = ?", Integer.class, id))
			.as("dead at the first refusal, not after the relay's maximum attempts")
			.isEqualTo(1);
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE id = ?", String.class, id))
			.contains("ProviderKeyExpiredException");
		assertThat(this.receivedKeys).isEmpty();
	}

	@Test
	void withinTheKeyTtlTheProviderGetsTheRowsKeyThroughOutboundCalls() {
		String table = "http_outbound_outbox";
		this.failuresLeft.set(1);
		OutboundCalls calls = new OutboundCalls(Map.of("payments",
				new ProviderPolicy(Duration.ofHours(24), false, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
		OutboxRelay relay = relay(table, new HttpOutboxDestination("payments", sender(), calls, "payments"));
		long id = appendCharge(table, "evt-charge-4");
		OutboxTestSupport.await(Duration.ofSeconds(10), "the charge is published", () -> {
			relay.runOnce();
			return "PUBLISHED".equals(status(table, id));
		});
		assertThat(this.receivedKeys).hasSize(2).containsOnly(OutboxEvent.deriveIdempotencyKey("evt-charge-4"));
	}

	@Test
	void aStatusFirstProviderIsAskedBeforeAResendAndADoneOperationIsNotSentAgain() {
		String table = "http_status_first_outbox";
		this.failuresLeft.set(1);
		List<OutboundOperation> asked = new CopyOnWriteArrayList<>();
		ProviderStatusCheck<Object> statusCheck = (operation) -> {
			asked.add(operation);
			return ProviderStatus.done("charged");
		};
		OutboundCalls calls = new OutboundCalls(Map.of("payments",
				new ProviderPolicy(Duration.ofHours(24), true, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
		OutboxRelay relay = relay(table,
				new HttpOutboxDestination("payments"::equals, sender(), calls, "payments", statusCheck));
		long id = appendCharge(table, "evt-charge-5");
		OutboxTestSupport.await(Duration.ofSeconds(10), "the charge is published", () -> {
			relay.runOnce();
			return "PUBLISHED".equals(status(table, id));
		});
		assertThat(this.receivedKeys).as("only the first attempt reached the provider").hasSize(1);
		assertThat(asked).singleElement()
			.satisfies((operation) -> assertThat(operation.key())
				.isEqualTo(OutboxEvent.deriveIdempotencyKey("evt-charge-5")));
	}

	@Test
	void aFailedRowHoldsBackItsKeyUnderItsOwnDestinationNameOnly() {
		String table = "http_two_names_outbox";
		this.failuresLeft.set(1);
		OutboxRelay relay = relay(table,
				new HttpOutboxDestination(Set.of("payments", "refunds")::contains, sender(), (Duration) null));
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		List<Long> ids = OutboxTestSupport.transactions(this.dataSource)
			.execute((status) -> outbox
				.appendAll(List.of(OutboxEvent.to("payments").key("order-1").payload(new Charge(100)).build(),
						OutboxEvent.to("refunds").key("order-1").payload(new Charge(-100)).build())));
		relay.runOnce();
		assertThat(status(table, ids.get(0))).as("the failed payment").isEqualTo("PENDING");
		assertThat(status(table, ids.get(1))).as("the refund of the same key, another destination name")
			.isEqualTo("PUBLISHED");
	}

	@Test
	void aRequestTheProviderRefusesForGoodIsDeadAtOnceWhileAConflictIsTriedAgain() {
		String table = "http_refused_outbox";
		OutboxRelay relay = relay(table, new HttpOutboxDestination("payments", sender(), (Duration) null));
		this.failureStatus = 422;
		this.failuresLeft.set(1);
		long refused = appendCharge(table, "evt-refused");
		relay.runOnce();
		assertThat(status(table, refused)).isEqualTo("DEAD");
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE id = ?", String.class, refused))
			.contains("422");
		this.failureStatus = 409;
		this.failuresLeft.set(1);
		this.jdbc.update("UPDATE " + table + " SET status = 'PUBLISHED', published_at = now() WHERE id = ?", refused);
		long conflicted = appendCharge(table, "evt-conflicted");
		relay.runOnce();
		assertThat(status(table, conflicted)).as("a request the provider is still working on").isEqualTo("PENDING");
	}

	private RestClientOutboxSender sender() {
		RestClient client = RestClient.builder()
			.requestFactory(new SimpleClientHttpRequestFactory())
			.baseUrl("http://127.0.0.1:" + this.server.getAddress().getPort())
			.build();
		return new RestClientOutboxSender(client, "/charges");
	}

	private OutboxRelay relay(String table, HttpOutboxDestination destination) {
		OutboxTestSupport.createTable(this.dataSource, table);
		return OutboxRelay.builder(this.dataSource)
			.table(table)
			.destination(destination)
			.maxAttempts(1000)
			.backoff(Duration.ofMillis(300), Duration.ofMillis(300))
			.build();
	}

	private long appendCharge(String table, String eventId) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox
				.append(OutboxEvent.to("payments").key("order-1").payload(new Charge(100)).eventId(eventId).build()));
		return OutboxTestSupport.id(this.dataSource, table, eventId);
	}

	private OutboxRelay relay(String table, Duration maxAge) {
		OutboxTestSupport.createTable(this.dataSource, table);
		RestClient client = RestClient.builder()
			.requestFactory(new SimpleClientHttpRequestFactory())
			.baseUrl("http://127.0.0.1:" + this.server.getAddress().getPort())
			.build();
		return OutboxRelay.builder(this.dataSource)
			.table(table)
			.destination(new HttpOutboxDestination("payments", new RestClientOutboxSender(client, "/charges"), maxAge))
			.maxAttempts(1000)
			.backoff(Duration.ofMillis(300), Duration.ofMillis(300))
			.build();
	}

	private String status(String table, long id) {
		return this.jdbc.queryForObject("SELECT status FROM " + table + " WHERE id = ?", String.class, id);
	}

	record Charge(int amount) {
	}

}
