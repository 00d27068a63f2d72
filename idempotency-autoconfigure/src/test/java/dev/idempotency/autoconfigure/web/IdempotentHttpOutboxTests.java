package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import dev.idempotency.autoconfigure.web.WebTestApplication.Order;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.util.Assert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The outbox inside {@code @Idempotent}: a handler that writes a business row and appends
 * an outbox message, end to end on the real server and PostgreSQL, over claim mode
 * (single transaction, two-phase, the application's default) × how the handler holds its
 * work (a plain handler, a {@code @Transactional} one whose failure marks the transaction
 * rollback-only, one whose append is written at once by {@code appendAll}, before it
 * fails) × its outcome (2xx, a returned 4xx, a client error from a
 * {@code @ResponseStatus} exception or a {@code ResponseStatusException}, a released
 * client error, a 5xx, an exception nothing resolves) × the key (free, or held by an
 * abandoned claim whose lease ran out, taken over). Each case asserts the executions, the
 * business rows, the outbox rows, the key's row and what the client got, then sends the
 * same request again, meant to succeed this time: a stored outcome is replayed and
 * appends nothing, a released key runs once more and takes effect once.
 * <p>
 * The outbox rows follow the business row in every case: a returned 4xx commits with
 * both, a client error decided from an exception is stored with neither (also when its
 * append was already written, and after a take-over, where the single-transaction undo
 * goes back to the transaction manager's savepoint instead of the store's).
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, IdempotentHttpOutboxTests.OutboxEndpoints.class },
		properties = "idempotency.outbox.relay.enabled=false")
class IdempotentHttpOutboxTests extends IdempotentHttpTestSupport {

	@Autowired
	private OutboxOrders outboxOrders;

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void outboxRowsFollowTheBusinessRow(Case matrixCase) throws Exception {
		String item = unique("outbox");
		String key = unique("k");
		String body = order(item, 1);
		String path = "/outbox/" + matrixCase.mode().segment + "/" + matrixCase.handler().segment;
		if (matrixCase.key() == KeyState.ABANDONED) {
			abandonedClaim(path, body, key);
		}
		AtomicInteger executions = this.outboxOrders.executions(item);
		executions.set(0);

		HttpResponse<byte[]> first = this.http.post(path, body, "Idempotency-Key", key, "X-Outcome",
				matrixCase.outcome().name());
		Outcome outcome = matrixCase.outcome();
		assertThat(first.statusCode()).as("what the client got").isEqualTo(outcome.status);
		assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(executions).as("executions").hasValue(1);
		int effects = outcome.commits ? 1 : 0;
		assertThat(orders(item)).as("business rows").isEqualTo(effects);
		assertThat(outboxRows(item)).as("outbox rows").isEqualTo(effects);
		if (outcome.stored) {
			assertThat(keyStatus(key)).as("the key's row").isEqualTo("DONE");
			assertThat(storedStatus(key)).as("the stored status").isEqualTo(outcome.status);
		}
		else if (matrixCase.mode() == Mode.SINGLE_TRANSACTION && matrixCase.key() == KeyState.ABANDONED) {
			// The take-over rolled back with the work: the claim is the abandoned one
			// again, to be taken over by the next request.
			assertThat(this.jdbc
				.queryForObject("SELECT status || ' ' || owner || ' ' || (locked_until < now()) FROM idempotency_key"
						+ " WHERE idempotency_key = ?", String.class, key))
				.as("the key's row, given back")
				.isEqualTo("IN_PROGRESS dead true");
		}
		else {
			await().atMost(Duration.ofSeconds(30))
				.untilAsserted(() -> assertThat(keyStatus(key)).as("the key's row, released").isNull());
		}

		HttpResponse<byte[]> again = this.http.post(path, body, "Idempotency-Key", key, "X-Outcome",
				Outcome.CREATED.name());
		if (outcome.stored) {
			assertIdenticalReplay(again, first);
			assertThat(executions).as("executions after the replay").hasValue(1);
			assertThat(orders(item)).as("business rows after the replay").isEqualTo(effects);
			assertThat(outboxRows(item)).as("outbox rows after the replay").isEqualTo(effects);
		}
		else {
			assertThat(again.statusCode()).as("the retry of a released key").isEqualTo(201);
			assertThat(again.headers().firstValue("Idempotent-Replayed")).isEmpty();
			assertThat(executions).as("executions after the retry").hasValue(2);
			assertThat(orders(item)).as("business rows after the retry").isOne();
			assertThat(outboxRows(item)).as("outbox rows after the retry").isOne();
		}
		assertThat(keyStatus(key)).isEqualTo("DONE");
	}

	/**
	 * Leave the key claimed by a request that died with its lease run out, for the same
	 * request: a client error is stored under another key first, to learn the request's
	 * fingerprint, with nothing else.
	 */
	private void abandonedClaim(String path, String body, String key) {
		String probe = unique("probe");
		HttpResponse<byte[]> declined = this.http.post(path, body, "Idempotency-Key", probe, "X-Outcome",
				Outcome.DECLINED.name());
		assertThat(declined.statusCode()).isEqualTo(Outcome.DECLINED.status);
		this.jdbc.update("""
				INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, owner, locked_until,
				    created_at, expires_at)
				SELECT scope, ?, request_hash, 'IN_PROGRESS', 'dead', now() - interval '1 second', created_at,
				    expires_at FROM idempotency_key WHERE idempotency_key = ?""", key, probe);
		assertThat(keyStatus(key)).isEqualTo("IN_PROGRESS");
	}

	private int outboxRows(String item) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM outbox WHERE message_key = ?", Integer.class,
				item);
		return (count != null) ? count : 0;
	}

	private @Nullable Integer storedStatus(String key) {
		List<Integer> statuses = this.jdbc
			.queryForList("SELECT http_status FROM idempotency_key WHERE idempotency_key = ?", Integer.class, key);
		return statuses.isEmpty() ? null : statuses.get(0);
	}

	static Stream<Case> cases() {
		List<Case> cases = new ArrayList<>();
		for (Mode mode : Mode.values()) {
			for (Handler handler : Handler.values()) {
				for (Outcome outcome : Outcome.values()) {
					for (KeyState key : KeyState.values()) {
						cases.add(new Case(mode, handler, outcome, key));
					}
				}
			}
		}
		return cases.stream();
	}

	record Case(Mode mode, Handler handler, Outcome outcome, KeyState key) {

		@Override
		public String toString() {
			return this.mode.label + ", " + this.handler.label + ", " + this.outcome.label + ", " + this.key.label;
		}

	}

	enum Mode {

		SINGLE_TRANSACTION("single", "single transaction"), TWO_PHASE("two-phase", "two-phase"),
		DEFAULT("default", "the application's default mode");

		final String segment;

		final String label;

		Mode(String segment, String label) {
			this.segment = segment;
			this.label = label;
		}

	}

	enum Handler {

		PLAIN("plain", "plain handler"),
		TRANSACTIONAL("transactional", "@Transactional handler, rollback-only on failure"),
		WRITTEN_AT_ONCE("written", "append written at once by appendAll");

		final String segment;

		final String label;

		Handler(String segment, String label) {
			this.segment = segment;
			this.label = label;
		}

	}

	enum Outcome {

		CREATED(201, true, true, "2xx"), REFUSED(422, true, true, "4xx returned"),
		DECLINED(402, true, false, "@ResponseStatus 402 exception"),
		NOT_FOUND(404, true, false, "ResponseStatusException 404"),
		THROTTLED(429, false, false, "@ResponseStatus 429 exception, a released client error"),
		UNAVAILABLE(503, false, false, "ResponseStatusException 503"),
		BROKEN(500, false, false, "exception nothing resolves");

		final int status;

		/** Whether the outcome is stored and replayed, or the key released. */
		final boolean stored;

		/** Whether the handler's work commits. */
		final boolean commits;

		final String label;

		Outcome(int status, boolean stored, boolean commits, String label) {
			this.status = status;
			this.stored = stored;
			this.commits = commits;
			this.label = label;
		}

	}

	enum KeyState {

		FREE("free key"), ABANDONED("abandoned claim taken over");

		final String label;

		KeyState(String label) {
			this.label = label;
		}

	}

	@ResponseStatus(HttpStatus.PAYMENT_REQUIRED)
	static final class Declined extends RuntimeException {

	}

	@ResponseStatus(HttpStatus.TOO_MANY_REQUESTS)
	static final class Throttled extends RuntimeException {

	}

	@Configuration(proxyBeanMethods = false)
	@Import(OutboxOrders.class)
	static class OutboxEndpoints {

	}

	/**
	 * Handlers that insert an order and append its event, then end as the request's
	 * {@code X-Outcome} says, in each claim mode and way of holding the work.
	 */
	@RestController
	static class OutboxOrders {

		private final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();

		private final JdbcTemplate jdbc;

		private final Outbox outbox;

		OutboxOrders(JdbcTemplate jdbc, Outbox outbox) {
			this.jdbc = jdbc;
			this.outbox = outbox;
		}

		// Public, so that the transactional proxy hands it to the bean.
		public AtomicInteger executions(String item) {
			return this.executions.computeIfAbsent(item, (name) -> new AtomicInteger());
		}

		@PostMapping("/outbox/single/plain")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		ResponseEntity<String> singlePlain(@RequestBody Order order, @RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, false);
		}

		@PostMapping("/outbox/single/transactional")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		@Transactional
		public ResponseEntity<String> singleTransactional(@RequestBody Order order,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, false);
		}

		@PostMapping("/outbox/single/written")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		ResponseEntity<String> singleWritten(@RequestBody Order order, @RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, true);
		}

		@PostMapping("/outbox/two-phase/plain")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<String> twoPhasePlain(@RequestBody Order order, @RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, false);
		}

		@PostMapping("/outbox/two-phase/transactional")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		@Transactional
		public ResponseEntity<String> twoPhaseTransactional(@RequestBody Order order,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, false);
		}

		@PostMapping("/outbox/two-phase/written")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<String> twoPhaseWritten(@RequestBody Order order, @RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, true);
		}

		@PostMapping("/outbox/default/plain")
		@Idempotent
		ResponseEntity<String> defaultPlain(@RequestBody Order order, @RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, false);
		}

		@PostMapping("/outbox/default/transactional")
		@Idempotent
		@Transactional
		public ResponseEntity<String> defaultTransactional(@RequestBody Order order,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, false);
		}

		@PostMapping("/outbox/default/written")
		@Idempotent
		ResponseEntity<String> defaultWritten(@RequestBody Order order, @RequestHeader("X-Outcome") Outcome outcome) {
			return work(order, outcome, true);
		}

		private ResponseEntity<String> work(Order order, Outcome outcome, boolean writtenAtOnce) {
			executions(order.item()).incrementAndGet();
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
			OutboxEvent event = OutboxEvent.to("orders")
				.key(order.item())
				.payload(Map.of("item", order.item()))
				.build();
			if (writtenAtOnce) {
				Assert.state(this.outbox.appendAll(List.of(event)).size() == 1, "one id for one message");
			}
			else {
				this.outbox.append(event);
			}
			return switch (outcome) {
				case CREATED -> ResponseEntity.status(HttpStatus.CREATED).body("created " + order.item());
				case REFUSED -> ResponseEntity.unprocessableContent().body("refused " + order.item());
				case DECLINED -> throw new Declined();
				case THROTTLED -> throw new Throttled();
				case NOT_FOUND -> throw new ResponseStatusException(HttpStatusCode.valueOf(404), "no such order");
				case UNAVAILABLE -> throw new ResponseStatusException(HttpStatusCode.valueOf(503), "try again");
				case BROKEN -> throw new IllegalStateException("broken");
			};
		}

	}

}
