package dev.idempotency.reliability;

import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A careful client: each payment has a key of its own, sent with every retry of it, and
 * is retried (on another replica, as a load balancer would) after a connection failure, a
 * timeout, a 5xx or a 409 until a definitive answer comes, within a bound of attempts and
 * time. A stream pays one order several times, one payment after the other, so that the
 * charges of an order have an order that Kafka must keep.
 */
class LoadClient {

	static final int MAX_ATTEMPTS = 500;

	static final Duration MAX_TIME = Duration.ofSeconds(120);

	private static final Pattern PAYMENT_ID = Pattern.compile("\"paymentId\":\"([0-9a-f-]{36})\"");

	private final Cluster cluster;

	private final HttpClient http = HttpClient.newBuilder()
		.connectTimeout(Duration.ofSeconds(2))
		.version(HttpClient.Version.HTTP_1_1)
		.build();

	LoadClient(Cluster cluster) {
		this.cluster = cluster;
	}

	/**
	 * Run streams until {@code stop} is set (and each has paid at least once).
	 * @param prefix the scenario's prefix of keys and order ids
	 * @param streams how many orders are paid at once
	 * @param stop set when the load is to end
	 * @return every operation
	 */
	Load run(String prefix, int streams, AtomicBoolean stop) {
		Queue<Operation> operations = new ConcurrentLinkedQueue<>();
		ExecutorService executor = Executors.newFixedThreadPool(streams);
		try {
			List<Future<?>> futures = new java.util.ArrayList<>();
			for (int s = 0; s < streams; s++) {
				String orderId = prefix + "-order-" + s;
				futures.add(executor.submit(() -> {
					for (int n = 1; n == 1 || !stop.get(); n++) {
						Operation operation = new Operation(prefix + "-key-" + orderId + "-" + n, orderId, n);
						operations.add(operation);
						pay(operation);
						if (operation.paymentId == null) {
							// Unanswered: a later payment could overtake it, so the
							// stream ends here and the order stays checkable.
							return;
						}
						// A steady load, not a flood: the machine also runs the
						// faults, and the relay drains what the load leaves.
						Pause.randomly(Duration.ofMillis(100), Duration.ofMillis(300));
					}
				}));
			}
			for (Future<?> future : futures) {
				future.get();
			}
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
		finally {
			executor.shutdownNow();
		}
		return new Load(List.copyOf(operations));
	}

	/** Pay until a definitive answer, or the bounds, on any replica. */
	void pay(Operation operation) {
		pay(operation, this.cluster.replicas);
	}

	/**
	 * Pay on one replica only, until a definitive answer or the bounds.
	 * @return whether the payment was answered 201
	 */
	boolean payOn(Replica replica, Operation operation) {
		pay(operation, List.of(replica));
		return operation.paymentId != null;
	}

	/** Pay on any of the given replicas, until a definitive answer or the bounds. */
	void pay(Operation operation, List<Replica> replicas) {
		String body = "{\"orderId\":\"" + operation.orderId + "\",\"amount\":" + operation.amount()
				+ ",\"currency\":\"EUR\"}";
		long deadline = System.nanoTime() + MAX_TIME.toNanos();
		long backoff = 50;
		while (operation.attempts < MAX_ATTEMPTS && System.nanoTime() < deadline) {
			operation.attempts++;
			Replica replica = replicas.get(ThreadLocalRandom.current().nextInt(replicas.size()));
			long pause;
			try {
				HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(replica.uri("/payments"))
					.timeout(Duration.ofSeconds(10))
					.header("Content-Type", "application/json")
					.header("Idempotency-Key", operation.key)
					.POST(HttpRequest.BodyPublishers.ofString(body))
					.build(), HttpResponse.BodyHandlers.ofString());
				int status = response.statusCode();
				if (status == 201) {
					Matcher matcher = PAYMENT_ID.matcher(response.body());
					if (matcher.find()) {
						operation.paymentId = matcher.group(1);
						return;
					}
					throw new IllegalStateException("201 without a payment id: " + response.body());
				}
				if (status == 409) {
					// In use by the attempt that died or still runs: honour Retry-After,
					// within a second.
					Optional<String> retryAfter = response.headers().firstValue("Retry-After");
					pause = Math.min(1000, retryAfter.map(LoadClient::millis).orElse(500L));
				}
				else if (status >= 500) {
					operation.serverErrors++;
					pause = backoff;
				}
				else {
					operation.refusal = status + " " + response.body();
					return;
				}
			}
			catch (IOException ex) {
				pause = backoff;
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
			backoff = Math.min(1000, backoff * 2);
			Pause.briefly(Duration.ofMillis(pause / 2 + ThreadLocalRandom.current().nextLong(pause / 2 + 1)));
		}
	}

	private static long millis(String retryAfter) {
		try {
			return Long.parseLong(retryAfter.trim()) * 1000;
		}
		catch (NumberFormatException ex) {
			return 1000;
		}
	}

	/** One payment and what became of it. */
	static final class Operation {

		final String key;

		final String orderId;

		final int sequence;

		volatile int attempts;

		volatile int serverErrors;

		volatile @org.jspecify.annotations.Nullable String paymentId;

		volatile @org.jspecify.annotations.Nullable String refusal;

		Operation(String key, String orderId, int sequence) {
			this.key = key;
			this.orderId = orderId;
			this.sequence = sequence;
		}

		String amount() {
			return this.sequence + ".00";
		}

	}

	/**
	 * The operations of one run.
	 *
	 * @param operations every operation
	 */
	record Load(List<Operation> operations) {

		long answered() {
			return this.operations.stream().filter((operation) -> operation.paymentId != null).count();
		}

		/**
		 * The payment ids the clients were given, by the key of their operation.
		 */
		Map<String, String> paymentIds() {
			Map<String, String> paymentIds = new HashMap<>();
			for (Operation operation : this.operations) {
				if (operation.paymentId != null) {
					paymentIds.put(operation.key, operation.paymentId);
				}
			}
			return paymentIds;
		}

		List<Operation> unanswered() {
			return this.operations.stream()
				.filter((operation) -> operation.paymentId == null && operation.refusal == null)
				.toList();
		}

		List<Operation> refused() {
			return this.operations.stream().filter((operation) -> operation.refusal != null).toList();
		}

		long serverErrors() {
			return this.operations.stream().mapToLong((operation) -> operation.serverErrors).sum();
		}

		long attempts() {
			return this.operations.stream().mapToLong((operation) -> operation.attempts).sum();
		}

	}

}
