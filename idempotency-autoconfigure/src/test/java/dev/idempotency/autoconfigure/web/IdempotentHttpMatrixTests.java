package dev.idempotency.autoconfigure.web;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import dev.idempotency.autoconfigure.web.MatrixEndpoints.Case;
import dev.idempotency.autoconfigure.web.MatrixEndpoints.Cases;
import dev.idempotency.autoconfigure.web.MatrixEndpoints.Outcome;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestInstance.Lifecycle;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.beans.factory.annotation.Autowired;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The web feature over the settings and paths an application combines: both claim modes ×
 * how the request reaches the handler (a request, a forward from another handler, an
 * asynchronous dispatch, an error page) × the handler's return type (a value, a
 * {@code ResponseEntity}, a void handler writing and flushing its output, a streamed
 * resource, a future returned at run time) × its outcome (2xx, a returned 4xx, a 4xx an
 * exception handler decided, a 5xx, an exception nothing resolves, a commit that fails) ×
 * a duplicate with the same key arriving after the first request, while it runs, or
 * racing it for the claim. Each case asserts how many times the handler ran, what the
 * database holds (the key's row and the handler's writes) and what both requests
 * received.
 * <p>
 * The database is one more axis: a subclass per database runs the combinations it can
 * give (MariaDB has no deferred constraint, so no commit that fails).
 * <p>
 * {@code ./mvnw verify} runs a pairwise selection: every pair of values of any two axes
 * in at least one case. {@code -Didempotency.matrix=full} runs every combination, in an
 * order shuffled by {@code -Didempotency.matrix.seed} (printed when not given).
 */
@IdempotentHttpTest(classes = { WebTestApplication.class, MatrixEndpoints.class },
		properties = "idempotency.web.lock-timeout=60s")
@TestInstance(Lifecycle.PER_CLASS)
abstract class IdempotentHttpMatrixTests extends IdempotentHttpTestSupport {

	@Autowired
	private Cases cases;

	@ParameterizedTest(name = "{0}")
	@MethodSource("combinations")
	void combination(Combination combination) throws Exception {
		String name = "m-" + UUID.randomUUID();
		String key = UUID.randomUUID().toString();
		Case gate = this.cases.of(name);
		Expected expected = Expected.of(combination);
		if (combination.timing() == Timing.AFTER) {
			gate.open.countDown();
			HttpResponse<byte[]> first = send(combination, name, key);
			expected.verify(first, send(combination, name, key));
		}
		else {
			List<Future<HttpResponse<byte[]>>> requests = start(combination, name, key, gate);
			awaitDuplicateInPlace(expected, requests, gate);
			gate.open.countDown();
			HttpResponse<byte[]> one = requests.get(0).get(90, TimeUnit.SECONDS);
			HttpResponse<byte[]> other = requests.get(1).get(90, TimeUnit.SECONDS);
			if (combination.timing() == Timing.DURING) {
				expected.verify(one, other);
			}
			else {
				expected.verifyEitherWay(one, other);
			}
		}
		assertThat(gate.executions).as("executions").hasValue(expected.executions());
		assertThat(keyStatus(key)).as("the key's row").isEqualTo(expected.keyStatus());
		if (expected.keyStatus() != null && expected.keyStatus().equals("DONE")) {
			assertThat(storedStatus(key)).as("the stored status").isEqualTo(expected.firstStatus());
		}
		assertThat(orders(name)).as("the handler's writes").isEqualTo(expected.orders());
	}

	/**
	 * Send the first request, then (during) the duplicate once the first runs its
	 * handler, or (before) both at once, racing for the claim.
	 */
	private List<Future<HttpResponse<byte[]>>> start(Combination combination, String name, String key, Case gate)
			throws Exception {
		if (combination.timing() == Timing.DURING) {
			Future<HttpResponse<byte[]>> first = this.executor.submit(() -> send(combination, name, key));
			await().atMost(Duration.ofSeconds(30)).until(() -> gate.entered.get() >= 1);
			return List.of(first, this.executor.submit(() -> send(combination, name, key)));
		}
		CountDownLatch go = new CountDownLatch(1);
		List<Future<HttpResponse<byte[]>>> racing = new ArrayList<>();
		for (int i = 0; i < 2; i++) {
			racing.add(this.executor.submit(() -> {
				go.await();
				return send(combination, name, key);
			}));
		}
		go.countDown();
		await().atMost(Duration.ofSeconds(30)).until(() -> gate.entered.get() >= 1);
		return racing;
	}

	/**
	 * Wait until the duplicate has met the first request: answered at once (two-phase),
	 * waiting for it (single-transaction), or in the handler beside it (no protocol).
	 */
	private static void awaitDuplicateInPlace(Expected expected, List<Future<HttpResponse<byte[]>>> requests,
			Case gate) {
		if (!expected.protocol()) {
			await().atMost(Duration.ofSeconds(30)).until(() -> gate.entered.get() >= 2);
		}
		else if (expected.combination().mode() == Mode.TWO_PHASE) {
			await().atMost(Duration.ofSeconds(30)).until(() -> requests.stream().anyMatch(Future::isDone));
		}
		else {
			awaitRequestsWaitingForTheirClaim(1);
		}
	}

	private HttpResponse<byte[]> send(Combination combination, String name, String key) {
		return this.http.exchange("POST", combination.path(), HttpRequest.BodyPublishers.noBody(), "Idempotency-Key",
				key, "X-Case", name, "X-Outcome", combination.outcome().name());
	}

	private @Nullable Integer storedStatus(String key) {
		List<Integer> statuses = this.jdbc
			.queryForList("SELECT http_status FROM idempotency_key WHERE idempotency_key = ?", Integer.class, key);
		return statuses.isEmpty() ? null : statuses.get(0);
	}

	/**
	 * Whether the database can fail a commit after the handler returned.
	 */
	protected abstract boolean canFailACommit();

	Stream<Combination> combinations() {
		List<Combination> all = Combination.all()
			.stream()
			.filter((combination) -> canFailACommit() || combination.outcome() != Outcome.COMMIT_FAILURE)
			.toList();
		if ("full".equals(System.getProperty("idempotency.matrix"))) {
			long seed = Long.getLong("idempotency.matrix.seed", new Random().nextLong());
			System.out.println("Running all " + all.size() + " combinations with -Didempotency.matrix.seed=" + seed);
			List<Combination> shuffled = new ArrayList<>(all);
			Collections.shuffle(shuffled, new Random(seed));
			return shuffled.stream();
		}
		return pairwise(all).stream();
	}

	/**
	 * Combinations that hold every pair of values of any two axes that some combination
	 * holds, chosen greedily: each next one covers the most pairs not covered yet.
	 */
	static List<Combination> pairwise(List<Combination> all) {
		Set<String> uncovered = new LinkedHashSet<>();
		all.forEach((combination) -> uncovered.addAll(combination.pairs()));
		List<Combination> chosen = new ArrayList<>();
		while (!uncovered.isEmpty()) {
			Combination best = all.stream()
				.max(Comparator.comparingLong(
						(Combination combination) -> combination.pairs().stream().filter(uncovered::contains).count()))
				.orElseThrow();
			chosen.add(best);
			uncovered.removeAll(best.pairs());
		}
		return chosen;
	}

	enum Mode {

		TWO_PHASE("two-phase"), SINGLE_TRANSACTION("single");

		private final String segment;

		Mode(String segment) {
			this.segment = segment;
		}

	}

	enum Dispatch {

		REQUEST("/matrix/"), FORWARD("/matrix-forward/"), ASYNC("/matrix-async/"), ERROR("/matrix-error/");

		private final String prefix;

		Dispatch(String prefix) {
			this.prefix = prefix;
		}

	}

	enum ReturnType {

		VALUE, ENTITY, WRITER, STREAM, FUTURE;

	}

	enum Timing {

		AFTER, DURING, BEFORE

	}

	record Combination(Mode mode, Dispatch dispatch, ReturnType returnType, Outcome outcome, Timing timing) {

		static List<Combination> all() {
			List<Combination> all = new ArrayList<>();
			for (Mode mode : Mode.values()) {
				for (Dispatch dispatch : Dispatch.values()) {
					for (ReturnType returnType : ReturnType.values()) {
						for (Outcome outcome : Outcome.values()) {
							for (Timing timing : Timing.values()) {
								Combination combination = new Combination(mode, dispatch, returnType, outcome, timing);
								if (combination.isPossible()) {
									all.add(combination);
								}
							}
						}
					}
				}
			}
			return all;
		}

		/**
		 * A future is refused whatever the handler would have done with it, so it has one
		 * outcome. An error page runs no protocol; it renders what the handler answers,
		 * but not a failure of its own.
		 */
		boolean isPossible() {
			if (this.returnType == ReturnType.FUTURE) {
				return this.outcome == Outcome.CREATED && this.dispatch != Dispatch.ERROR;
			}
			return this.dispatch != Dispatch.ERROR
					|| (this.outcome != Outcome.THROWN && this.outcome != Outcome.COMMIT_FAILURE);
		}

		String path() {
			return this.dispatch.prefix + this.mode.segment + "/" + this.returnType.name().toLowerCase();
		}

		List<String> pairs() {
			List<String> values = List.of("mode=" + this.mode, "dispatch=" + this.dispatch,
					"returnType=" + this.returnType, "outcome=" + this.outcome, "timing=" + this.timing);
			List<String> pairs = new ArrayList<>();
			for (int i = 0; i < values.size(); i++) {
				for (int j = i + 1; j < values.size(); j++) {
					pairs.add(values.get(i) + "," + values.get(j));
				}
			}
			return pairs;
		}

		@Override
		public String toString() {
			String outcome = (this.returnType == ReturnType.FUTURE) ? "refused at run time" : this.outcome.toString();
			return this.mode + " " + this.dispatch + " " + this.returnType + " " + outcome + ", duplicate "
					+ this.timing;
		}

	}

	/**
	 * What the duplicate of a request gets.
	 */
	enum Duplicate {

		/** The stored response, byte for byte. */
		REPLAY,

		/** A run of its own, after the first gave its key back. */
		RUN,

		/** 409: the key is claimed. */
		KEY_IN_USE,

		/** A run of its own, beside the first: there is no protocol. */
		UNPROTECTED

	}

	/**
	 * What a combination must end with, from the documented outcomes.
	 */
	record Expected(Combination combination, boolean protocol, int firstStatus, Duplicate duplicate, int executions,
			@Nullable String keyStatus, int orders) {

		private static final Map<Outcome, Integer> STATUSES = Map.of(Outcome.CREATED, 201,
				Outcome.RETURNED_CLIENT_ERROR, 410, Outcome.EXCEPTION_CLIENT_ERROR, 402, Outcome.SERVER_ERROR, 503,
				Outcome.THROWN, 500, Outcome.COMMIT_FAILURE, 500);

		static Expected of(Combination combination) {
			Outcome outcome = combination.outcome();
			if (combination.dispatch() == Dispatch.ERROR) {
				return new Expected(combination, false, STATUSES.get(outcome), Duplicate.UNPROTECTED, 2, null, 2);
			}
			if (combination.returnType() == ReturnType.FUTURE) {
				return new Expected(combination, true, 500, Duplicate.KEY_IN_USE, 1, "IN_PROGRESS", 0);
			}
			boolean stored = outcome == Outcome.CREATED || outcome == Outcome.RETURNED_CLIENT_ERROR
					|| outcome == Outcome.EXCEPTION_CLIENT_ERROR;
			boolean committed = outcome == Outcome.CREATED || outcome == Outcome.RETURNED_CLIENT_ERROR;
			boolean refusedAtOnce = combination.mode() == Mode.TWO_PHASE && combination.timing() != Timing.AFTER;
			Duplicate duplicate = refusedAtOnce ? Duplicate.KEY_IN_USE : stored ? Duplicate.REPLAY : Duplicate.RUN;
			int executions = (duplicate == Duplicate.RUN) ? 2 : 1;
			return new Expected(combination, true, STATUSES.get(outcome), duplicate, executions, stored ? "DONE" : null,
					committed ? 1 : 0);
		}

		void verify(HttpResponse<byte[]> first, HttpResponse<byte[]> duplicate) {
			assertThat(first.statusCode()).as("the first response").isEqualTo(this.firstStatus);
			assertThat(first.headers().firstValue("Idempotent-Replayed")).as("the first response").isEmpty();
			switch (this.duplicate) {
				case REPLAY -> assertIdenticalReplay(duplicate, first);
				case KEY_IN_USE -> {
					assertThat(duplicate.statusCode()).as("the duplicate").isEqualTo(409);
					assertThat(body(duplicate)).as("the duplicate").contains("#key-in-use");
				}
				default -> {
					assertThat(duplicate.statusCode()).as("the duplicate").isEqualTo(this.firstStatus);
					assertThat(duplicate.headers().firstValue("Idempotent-Replayed")).as("the duplicate").isEmpty();
				}
			}
		}

		/**
		 * Verify two requests that raced for the claim: either may have won it.
		 */
		void verifyEitherWay(HttpResponse<byte[]> one, HttpResponse<byte[]> other) {
			try {
				verify(one, other);
			}
			catch (AssertionError ex) {
				try {
					verify(other, one);
				}
				catch (AssertionError swapped) {
					ex.addSuppressed(swapped);
					throw ex;
				}
			}
		}

	}

}
