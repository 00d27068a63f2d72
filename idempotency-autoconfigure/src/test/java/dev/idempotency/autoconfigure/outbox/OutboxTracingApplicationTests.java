package dev.idempotency.autoconfigure.outbox;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import brave.handler.MutableSpan;
import brave.handler.SpanHandler;
import brave.propagation.TraceContext;
import com.sun.net.httpserver.HttpServer;
import dev.idempotency.core.jdbc.HeaderCodec;
import dev.idempotency.kafka.IdempotentListener;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxTracing;
import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.http.RestClientOutboxSender;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import dev.idempotency.web.Idempotent;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * One trace from an HTTP request to everything its outbox rows reach, in a running
 * service whose tracing Spring Boot configures (Brave, W3C propagation): the request that
 * appends, the stored row, the relay's sends, the Kafka record and the HTTP provider's
 * request, and the {@code @IdempotentListener} that consumes the record, with
 * {@code spring.kafka.listener.observation-enabled=true}.
 */
@PostgresTest
@KafkaTest
class OutboxTracingApplicationTests {

	private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";

	private static final String CLIENT_SPAN_ID = "00f067aa0ba902b7";

	private final TestSchema schema;

	private final EmbeddedKafkaBroker broker;

	private final HttpServer provider;

	private final List<String> providerTraceparents = new CopyOnWriteArrayList<>();

	OutboxTracingApplicationTests(TestSchema schema, EmbeddedKafkaBroker broker) throws IOException {
		this.schema = schema;
		this.broker = broker;
		this.provider = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
		this.provider.createContext("/charges", (exchange) -> {
			this.providerTraceparents.add(String.valueOf(exchange.getRequestHeaders().getFirst("traceparent")));
			exchange.sendResponseHeaders(201, -1);
			exchange.close();
		});
		this.provider.start();
	}

	@AfterEach
	void stopProvider() {
		this.provider.stop(0);
	}

	@Test
	void oneTraceGoesFromTheRequestThatAppendsThroughTheRowTheRecordAndTheProviderToTheListener() throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("traced-orders");
		this.broker.addTopics(topic);
		try (ConfigurableApplicationContext context = run(topic, Map.of())) {
			assertThat(context.getBeansOfType(OutboxTracing.class)).hasSize(1);
			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			HttpResponse<String> response = HttpClient.newHttpClient()
				.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
					.header("Idempotency-Key", "order-1")
					.header("traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN_ID + "-01")
					.POST(HttpRequest.BodyPublishers.noBody())
					.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(response.statusCode()).isEqualTo(200);

			// The listener bean is a proxy: what it received is kept apart.
			Received listener = context.getBean(Received.class);
			SpanRecorder spans = context.getBean(SpanRecorder.class);
			await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
				assertThat(listener.recordTraceparents).hasSize(1);
				assertThat(this.providerTraceparents).hasSize(1);
				assertThat(spans.named("idempotency claim", "kafka")).isNotEmpty();
			});
			JdbcTemplate jdbc = new JdbcTemplate(this.schema.dataSource());
			List<String> stored = jdbc.queryForList("SELECT headers FROM traced_outbox WHERE headers IS NOT NULL",
					String.class);
			assertThat(stored).hasSize(2)
				.allSatisfy((headers) -> assertThat(HeaderCodec.decode(headers).get("traceparent")).singleElement()
					.asString()
					.startsWith("00-" + TRACE_ID + "-"));
			assertThat(listener.recordTraceparents).singleElement().asString().startsWith("00-" + TRACE_ID + "-");
			assertThat(this.providerTraceparents).singleElement().asString().startsWith("00-" + TRACE_ID + "-");
			assertThat(listener.currentTraceIds).containsExactly(TRACE_ID);
			MutableSpan claim = spans.named("idempotency claim", "kafka").get(0);
			assertThat(claim.traceId()).isEqualTo(TRACE_ID);
			MutableSpan kafkaSend = spans.named("outbox kafka send", null).get(0);
			MutableSpan httpSend = spans.named("outbox http send", null).get(0);
			assertThat(List.of(kafkaSend.traceId(), httpSend.traceId())).containsOnly(TRACE_ID);
			assertThat(listener.recordTraceparents.get(0)).as("the record carries the relay's send span")
				.contains(kafkaSend.id());
			// The relay's batch ("idempotency publish") is a trace of its own: it serves
			// rows of many traces.
			assertThat(spans.all()).filteredOn((span) -> !"idempotency publish".equals(span.name()))
				.as("no span of the flow starts a trace of its own")
				.allSatisfy((span) -> assertThat(span.traceId()).isEqualTo(TRACE_ID));
		}
	}

	@Test
	void withTracingTurnedOffRowsAreStoredWithoutTraceHeaders() throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("untraced-orders");
		this.broker.addTopics(topic);
		try (ConfigurableApplicationContext context = run(topic,
				Map.of("idempotency.outbox.tracing.enabled", "false"))) {
			assertThat(context.getBeansOfType(OutboxTracing.class)).isEmpty();
			JdbcTemplate jdbc = new JdbcTemplate(this.schema.dataSource());
			long before = jdbc.queryForObject("SELECT coalesce(max(id), 0) FROM traced_outbox", Long.class);
			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			HttpResponse<String> response = HttpClient.newHttpClient()
				.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
					.header("Idempotency-Key", "order-2")
					.header("traceparent", "00-" + TRACE_ID + "-" + CLIENT_SPAN_ID + "-01")
					.POST(HttpRequest.BodyPublishers.noBody())
					.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(response.statusCode()).isEqualTo(200);
			assertThat(jdbc.queryForList("SELECT headers FROM traced_outbox WHERE id > ?", String.class, before))
				.hasSize(2)
				.containsOnlyNulls();
		}
	}

	private ConfigurableApplicationContext run(String topic, Map<String, String> extra) {
		Map<String, Object> properties = new HashMap<>();
		properties.put("spring.datasource.url", this.schema.getJdbcUrl());
		properties.put("spring.datasource.username", this.schema.getUsername());
		properties.put("spring.datasource.password", this.schema.getPassword());
		properties.put("spring.kafka.bootstrap-servers", this.broker.getBrokersAsString());
		properties.put("spring.kafka.consumer.group-id", "traced-" + topic);
		properties.put("spring.kafka.consumer.auto-offset-reset", "earliest");
		properties.put("spring.kafka.listener.observation-enabled", "true");
		properties.put("management.tracing.sampling.probability", "1.0");
		properties.put("idempotency.outbox.table", "traced_outbox");
		properties.put("server.port", "0");
		properties.put("test.topic", topic);
		properties.put("test.provider", "http://127.0.0.1:" + this.provider.getAddress().getPort());
		properties.putAll(extra);
		return new SpringApplicationBuilder(TracedApplication.class).properties(properties).run();
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class TracedApplication {

		@Bean
		OrdersController ordersController(Outbox outbox, @Value("${test.topic}") String topic) {
			return new OrdersController(outbox, topic);
		}

		@Bean
		HttpOutboxDestination paymentsDestination(@Value("${test.provider}") String provider) {
			RestClient client = RestClient.builder()
				.requestFactory(new SimpleClientHttpRequestFactory())
				.baseUrl(provider)
				.build();
			return new HttpOutboxDestination("payments", new RestClientOutboxSender(client, "/charges"),
					(Duration) null);
		}

		@Bean
		Received received() {
			return new Received();
		}

		@Bean
		TracedListener tracedListener(Tracer tracer, Received received) {
			return new TracedListener(tracer, received);
		}

		@Bean
		SpanRecorder spanRecorder() {
			return new SpanRecorder();
		}

	}

	@RestController
	static class OrdersController {

		private final Outbox outbox;

		private final String topic;

		OrdersController(Outbox outbox, String topic) {
			this.outbox = outbox;
			this.topic = topic;
		}

		@Idempotent
		@PostMapping("/orders")
		String order() {
			this.outbox.append(OutboxEvent.to(this.topic).key("order").payload(Map.of("order", 1)).build());
			this.outbox.append(OutboxEvent.to("payments").key("order").payload(Map.of("amount", 100)).build());
			return "ordered";
		}

	}

	static class Received {

		final List<String> recordTraceparents = new CopyOnWriteArrayList<>();

		final List<String> currentTraceIds = new CopyOnWriteArrayList<>();

	}

	static class TracedListener {

		private final Tracer tracer;

		private final Received received;

		TracedListener(Tracer tracer, Received received) {
			this.tracer = tracer;
			this.received = received;
		}

		@KafkaListener(topics = "${test.topic}")
		@IdempotentListener
		void listen(ConsumerRecord<String, String> record) {
			Header traceparent = record.headers().lastHeader("traceparent");
			this.received.recordTraceparents
				.add((traceparent != null) ? new String(traceparent.value(), StandardCharsets.UTF_8) : "none");
			Span current = this.tracer.currentSpan();
			this.received.currentTraceIds.add((current != null) ? current.context().traceId() : "none");
		}

	}

	/**
	 * Keeps the spans the tracer reports.
	 */
	static class SpanRecorder extends SpanHandler {

		private final List<MutableSpan> spans = new CopyOnWriteArrayList<>();

		@Override
		public boolean end(TraceContext context, MutableSpan span, Cause cause) {
			this.spans.add(span);
			return true;
		}

		List<MutableSpan> all() {
			return List.copyOf(this.spans);
		}

		List<MutableSpan> named(String name, String feature) {
			return this.spans.stream()
				.filter((span) -> name.equals(span.name()))
				.filter((span) -> feature == null || feature.equals(span.tag("feature")))
				.toList();
		}

	}

}
