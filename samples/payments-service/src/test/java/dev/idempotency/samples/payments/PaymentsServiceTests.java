package dev.idempotency.samples.payments;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import dev.idempotency.test.KafkaTest;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.annotation.DirtiesContext;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sample's HTTP contract and its Kafka and outbox flows, end to end over real HTTP,
 * the in-process broker and a real database, one subclass per database. The sample is not
 * told which database it runs on: it finds out from its connection.
 * <p>
 * Payments from the review threshold on are charged without the hold of a fraud review,
 * which {@link PaymentsWalkthroughTests} shows. Each context is closed after its class,
 * so that its listener leaves the consumer group and cannot take the events of the next
 * class's test to its own database.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "payments.review.hold=0s")
@KafkaTest
@DirtiesContext
abstract class PaymentsServiceTests {

	private static final JsonMapper json = JsonMapper.builder().build();

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	int port;

	@Autowired
	JdbcTemplate jdbc;

	@Autowired
	KafkaTemplate<String, String> kafka;

	@Test
	void paymentIsChargedOnceAndReplayedByteForByte() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		String key = UUID.randomUUID().toString();
		String body = "{\"orderId\": \"" + orderId + "\", \"amount\": 1200, \"currency\": \"RUB\"}";
		HttpResponse<String> first = post("/payments", key, body);
		assertThat(first.statusCode()).isEqualTo(201);
		JsonNode payment = json.readTree(first.body());
		String paymentId = payment.get("paymentId").asString();
		assertThat(first.headers().firstValue("Location")).hasValue("/payments/" + paymentId);
		assertThat(payment.get("orderId").asString()).isEqualTo(orderId);
		assertThat(payment.get("amount").decimalValue()).isEqualByComparingTo("1200");
		assertThat(payment.get("currency").asString()).isEqualTo("RUB");
		assertThat(payment.get("status").asString()).isEqualTo("CHARGED");

		String reordered = "{\"currency\":\"RUB\",\"amount\":1200,\"orderId\":\"" + orderId + "\"}";
		HttpResponse<String> repeat = post("/payments", key, reordered);
		assertThat(repeat.statusCode()).isEqualTo(201);
		assertThat(repeat.body()).isEqualTo(first.body());
		assertThat(repeat.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
		assertThat(repeat.headers().firstValue("Idempotent-Replayed")).hasValue("true");

		HttpResponse<String> read = get("/payments/" + paymentId);
		assertThat(read.statusCode()).isEqualTo(200);
		assertThat(json.readTree(read.body())).isEqualTo(payment);
		assertThat(json.readTree(get("/orders/" + orderId + "/charges").body()))
			.isEqualTo(json.readTree("{\"orderId\":\"" + orderId + "\",\"charges\":1,\"total\":1200}"));
	}

	@Test
	void amountsKeepTheScaleTheyWereSentWithAndTotalsTheLargestOfTheirs() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		HttpResponse<String> whole = post("/payments", UUID.randomUUID().toString(), payment(orderId, "1200", "EUR"));
		HttpResponse<String> cents = post("/payments", UUID.randomUUID().toString(), payment(orderId, "0.50", "EUR"));
		assertThat(whole.body()).contains("\"amount\":1200,");
		assertThat(cents.body()).contains("\"amount\":0.50,");
		for (HttpResponse<String> created : List.of(whole, cents)) {
			assertThat(created.statusCode()).isEqualTo(201);
			assertThat(get(created.headers().firstValue("Location").orElseThrow()).body()).isEqualTo(created.body());
		}
		assertThat(get("/orders/" + orderId + "/charges").body())
			.isEqualTo("{\"orderId\":\"" + orderId + "\",\"charges\":2,\"total\":1200.50}");
		await(() -> providerChargesOf(orderId) == 2);
		assertThat(get("/provider/orders/" + orderId + "/charges").body()).contains("\"total\":1200.50")
			.contains("\"charges\":2");
	}

	@Test
	void sameKeyWithAnotherBodyIsRejectedAndChargesNothing() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		String key = UUID.randomUUID().toString();
		post("/payments", key, "{\"orderId\":\"" + orderId + "\",\"amount\":1200,\"currency\":\"RUB\"}");
		HttpResponse<String> other = post("/payments", key,
				"{\"orderId\":\"" + orderId + "\",\"amount\":2400,\"currency\":\"RUB\"}");
		assertThat(other.statusCode()).isEqualTo(422);
		assertThat(other.headers().firstValue("Content-Type"))
			.hasValueSatisfying((type) -> assertThat(type).startsWith("application/problem+json"));
		assertThat(chargesOf(orderId)).isEqualTo(1);
	}

	@Test
	void missingKeyIsABadRequest() throws Exception {
		HttpRequest request = HttpRequest.newBuilder(uri("/payments"))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString("{\"orderId\":\"o\",\"amount\":1,\"currency\":\"RUB\"}"))
			.build();
		assertThat(this.http.send(request, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(400);
	}

	@Test
	void invalidPaymentsAreRefusedBeforeAnythingIsChargedAndTheirKeysStayFree() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		String key = UUID.randomUUID().toString();
		List<String> invalid = List.of(payment(orderId, "1200", "XYZ"), payment(orderId, "1200", "euro"),
				payment(orderId, "0", "EUR"), payment(orderId, "-1", "EUR"), payment(orderId, "1000000.01", "EUR"),
				payment(orderId, "1.234", "EUR"), payment("o".repeat(65), "1200", "EUR"),
				payment("order/1", "1200", "EUR"), "{\"orderId\":\"" + orderId + "\",\"amount\":1200}",
				"{\"amount\":1200,\"currency\":\"EUR\"}");
		for (String body : invalid) {
			HttpResponse<String> refused = post("/payments", key, body);
			assertThat(refused.statusCode()).as(body).isEqualTo(400);
			assertThat(json.readTree(refused.body()).get("errors").size()).as(body).isPositive();
		}
		HttpResponse<String> huge = post("/payments", key, payment(orderId, "1200", "E".repeat(11 * 1024 * 1024)));
		assertThat(huge.statusCode()).isEqualTo(413);
		assertThat(chargesOf(orderId)).isZero();
		assertThat(post("/payments", key, payment(orderId, "999999.99", "EUR")).statusCode()).isEqualTo(201);
		assertThat(chargesOf(orderId)).isOne();
	}

	@Test
	void redeliveredOrderConfirmedEventChargesOnce() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		String eventId = UUID.randomUUID().toString();
		String event = "{\"eventId\":\"" + eventId + "\",\"orderId\":\"" + orderId
				+ "\",\"totalAmount\":1200,\"currency\":\"RUB\"}";
		for (int i = 0; i < 3; i++) {
			ProducerRecord<String, String> record = new ProducerRecord<>(OrderConfirmedListener.TOPIC, orderId, event);
			record.headers().add("event-id", eventId.getBytes(StandardCharsets.UTF_8));
			this.kafka.send(record).get(30, TimeUnit.SECONDS);
		}
		// A later event of the same order proves the three copies before it were
		// consumed.
		String laterId = UUID.randomUUID().toString();
		ProducerRecord<String, String> later = new ProducerRecord<>(OrderConfirmedListener.TOPIC, orderId,
				event.replace(eventId, laterId));
		later.headers().add("event-id", laterId.getBytes(StandardCharsets.UTF_8));
		this.kafka.send(later).get(30, TimeUnit.SECONDS);
		await(() -> chargesOf(orderId) == 2);
		assertThat(chargesOf(orderId)).isEqualTo(2);
	}

	@Test
	void outboxDeliversThePaymentToTheProviderWhichChargesOnceEvenWhenSentAgain() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		post("/payments", UUID.randomUUID().toString(),
				"{\"orderId\":\"" + orderId + "\",\"amount\":1200,\"currency\":\"RUB\"}");
		await(() -> providerChargesOf(orderId) == 1 && published(orderId));
		// The relay may deliver a row more than once (a crash after sending, before
		// marking):
		// send it again, and the provider, honouring Idempotency-Key, does not charge
		// again.
		this.jdbc.update("UPDATE outbox SET status = 'PENDING', published_at = NULL WHERE message_key = ?", orderId);
		await(() -> published(orderId));
		assertThat(providerChargesOf(orderId)).isEqualTo(1);
		Map<String, Object> provider = json.readValue(get("/provider/orders/" + orderId + "/charges").body(),
				Map.class);
		assertThat(provider).containsEntry("charges", 1).containsEntry("total", 1200);
	}

	@Test
	void refundIsUniquePerOrderWithoutAKey() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		HttpResponse<String> first = post("/orders/" + orderId + "/refund", null, "{\"amount\":1200}");
		HttpResponse<String> repeat = post("/orders/" + orderId + "/refund", null, "{\"amount\":1200}");
		HttpResponse<String> other = post("/orders/" + orderId + "/refund", null, "{\"amount\":100}");
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(repeat.statusCode()).isEqualTo(200);
		assertThat(json.readTree(repeat.body())).isEqualTo(json.readTree(first.body()));
		assertThat(other.statusCode()).isEqualTo(409);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM refund WHERE order_id = ?", Integer.class, orderId))
			.isOne();
	}

	@Test
	void putWithAClientChosenIdConverges() throws Exception {
		UUID id = UUID.randomUUID();
		String body = "{\"holder\":\"A. Ivanova\",\"last4\":\"4242\"}";
		HttpResponse<String> first = put("/payment-methods/" + id, body);
		HttpResponse<String> repeat = put("/payment-methods/" + id, body);
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(repeat.statusCode()).isEqualTo(200);
		assertThat(repeat.body()).isEqualTo(first.body());
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM payment_method WHERE id = ?", Integer.class, id))
			.isOne();
	}

	@Test
	void putWithAClientChosenIdAndAnotherStateUpdatesTheRow() throws Exception {
		UUID id = UUID.randomUUID();
		assertThat(put("/payment-methods/" + id, "{\"holder\":\"A. Ivanova\",\"last4\":\"4242\"}").statusCode())
			.isEqualTo(201);
		String changed = "{\"holder\":\"A. Petrova\",\"last4\":\"1881\"}";
		HttpResponse<String> update = put("/payment-methods/" + id, changed);
		assertThat(update.statusCode()).isEqualTo(200);
		assertThat(json.readTree(update.body())).isEqualTo(json.readTree(changed));
		assertThat(this.jdbc.queryForMap("SELECT holder, last4 FROM payment_method WHERE id = ?", id))
			.containsEntry("holder", "A. Petrova")
			.containsEntry("last4", "1881");
	}

	@Test
	void concurrentFirstPutsOfAClientChosenIdCreateItOnce() throws Exception {
		UUID id = UUID.randomUUID();
		List<Integer> statuses = concurrently(4,
				() -> put("/payment-methods/" + id, "{\"holder\":\"A. Ivanova\",\"last4\":\"4242\"}"));
		assertThat(statuses).containsExactlyInAnyOrder(201, 200, 200, 200);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM payment_method WHERE id = ?", Integer.class, id))
			.isOne();
	}

	@Test
	void concurrentRefundsOfAnOrderRefundItOnce() throws Exception {
		String orderId = "order-" + UUID.randomUUID();
		List<Integer> statuses = concurrently(4,
				() -> post("/orders/" + orderId + "/refund", null, "{\"amount\":1200}"));
		assertThat(statuses).containsExactlyInAnyOrder(201, 200, 200, 200);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM refund WHERE order_id = ?", Integer.class, orderId))
			.isOne();
	}

	/**
	 * Send requests from as many threads, released together, and return their statuses.
	 */
	private static List<Integer> concurrently(int threads, Request request) throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			CountDownLatch ready = new CountDownLatch(threads);
			CountDownLatch start = new CountDownLatch(1);
			List<Future<Integer>> responses = new ArrayList<>();
			for (int i = 0; i < threads; i++) {
				responses.add(executor.submit(() -> {
					ready.countDown();
					start.await();
					return request.send().statusCode();
				}));
			}
			ready.await();
			start.countDown();
			List<Integer> statuses = new ArrayList<>();
			for (Future<Integer> response : responses) {
				statuses.add(response.get(60, TimeUnit.SECONDS));
			}
			return statuses;
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static String payment(String orderId, String amount, String currency) {
		return "{\"orderId\":\"" + orderId + "\",\"amount\":" + amount + ",\"currency\":\"" + currency + "\"}";
	}

	private int chargesOf(String orderId) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM payment WHERE order_id = ?", Integer.class,
				orderId);
		return (count != null) ? count : 0;
	}

	private int providerChargesOf(String orderId) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM provider_charge WHERE order_id = ?",
				Integer.class, orderId);
		return (count != null) ? count : 0;
	}

	private boolean published(String orderId) {
		Integer pending = this.jdbc.queryForObject(
				"SELECT count(*) FROM outbox WHERE message_key = ? AND status <> 'PUBLISHED'", Integer.class, orderId);
		return pending != null && pending == 0;
	}

	private static void await(Supplier<Boolean> condition) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
		while (!condition.get()) {
			assertThat(System.nanoTime()).as("condition within 60 s").isLessThan(deadline);
			Thread.sleep(100);
		}
	}

	private HttpResponse<String> post(String path, String key, String body) throws Exception {
		HttpRequest.Builder request = HttpRequest.newBuilder(uri(path))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(body));
		if (key != null) {
			request.header("Idempotency-Key", key);
		}
		return this.http.send(request.build(), HttpResponse.BodyHandlers.ofString());
	}

	private HttpResponse<String> put(String path, String body) throws Exception {
		return this.http.send(HttpRequest.newBuilder(uri(path))
			.header("Content-Type", "application/json")
			.PUT(HttpRequest.BodyPublishers.ofString(body))
			.build(), HttpResponse.BodyHandlers.ofString());
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.http.send(HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
	}

	private URI uri(String path) {
		return URI.create("http://localhost:" + this.port + path);
	}

	/**
	 * A request to the sample.
	 */
	@FunctionalInterface
	private interface Request {

		HttpResponse<String> send() throws Exception;

	}

}
