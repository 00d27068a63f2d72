package dev.idempotency.outbox;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import brave.handler.MutableSpan;
import com.sun.net.httpserver.HttpServer;
import dev.idempotency.core.jdbc.HeaderCodec;
import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.http.RestClientOutboxSender;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import io.micrometer.tracing.BaggageInScope;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The trace context of an append, with a real tracer (Brave behind Micrometer Tracing):
 * stored with the row, and continued by the relay's send as a child span whose context
 * the Kafka record and the HTTP request carry, baggage included.
 */
@PostgresTest
@KafkaTest
class OutboxTracingTests {

	private static final String KAFKA_SEND = "outbox kafka send";

	private final EmbeddedKafkaBroker broker;

	private final TestTracing tracing = new TestTracing();

	private final SingleConnectionDataSource dataSource;

	private final JdbcTemplate jdbc;

	private final KafkaTemplate<byte[], byte[]> kafka;

	OutboxTracingTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		this.broker = broker;
		this.dataSource = OutboxTestSupport.ownConnection(schema);
		this.jdbc = new JdbcTemplate(this.dataSource);
		this.kafka = OutboxTestSupport.kafkaTemplate(broker);
	}

	@AfterEach
	void close() {
		OutboxTestSupport.close(this.kafka);
		this.dataSource.destroy();
		this.tracing.close();
	}

	@Test
	void theKafkaRecordCarriesTheTraceOfTheAppendThroughAChildSpanOfTheStoredContext() {
		String table = "traced_kafka_outbox";
		String topic = topic("traced");
		OutboxRelay relay = kafkaRelay(table);
		Tracer tracer = this.tracing.tracer;
		Span request = tracer.nextSpan().name("request").start();
		long id;
		try (Tracer.SpanInScope scope = tracer.withSpan(request);
				BaggageInScope baggage = tracer.createBaggageInScope(TestTracing.BAGGAGE_FIELD, "acme")) {
			id = append(table, topic, "evt-traced");
		}
		finally {
			request.end();
		}
		String traceId = request.context().traceId();
		Map<String, List<String>> stored = storedHeaders(table, id);
		assertThat(stored.get("traceparent")).singleElement()
			.isEqualTo("00-" + traceId + "-" + request.context().spanId() + "-01");
		assertThat(stored.get("baggage")).singleElement().asString().contains("tenant=acme");

		relay.runOnce();
		assertThat(status(table, id)).isEqualTo("PUBLISHED");
		ConsumerRecord<byte[], byte[]> record = KafkaTopicReader.readAll(this.broker, topic).get(0);
		MutableSpan send = this.tracing.spansNamed(KAFKA_SEND).get(0);
		assertThat(send.traceId()).isEqualTo(traceId);
		assertThat(send.parentId()).as("a child of the stored context").isEqualTo(request.context().spanId());
		assertThat(send.kind()).isEqualTo(brave.Span.Kind.PRODUCER);
		assertThat(send.tag("outbox.event-id")).isEqualTo("evt-traced");
		assertThat(header(record, "traceparent")).as("the send's context, not the stored one")
			.isEqualTo("00-" + traceId + "-" + send.id() + "-01");
		assertThat(record.headers().headers("traceparent")).hasSize(1);
		assertThat(header(record, "baggage")).contains("tenant=acme");
	}

	@Test
	void aRowCarriesTheTraceCurrentAtItsAppendThoughItIsWrittenAtTheCommitOutsideIt() {
		String table = "traced_at_append_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		outbox.setTracing(this.tracing.outboxTracing());
		Tracer tracer = this.tracing.tracer;
		Span handler = tracer.nextSpan().name("handler").start();
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			try (Tracer.SpanInScope scope = tracer.withSpan(handler)) {
				outbox.append(OutboxEvent.to("orders")
					.key("order-1")
					.payload(Map.of("n", 1))
					.eventId("evt-at-append")
					.build());
			}
			finally {
				handler.end();
			}
		});
		long id = OutboxTestSupport.id(this.dataSource, table, "evt-at-append");
		assertThat(storedHeaders(table, id).get("traceparent")).singleElement()
			.isEqualTo("00-" + handler.context().traceId() + "-" + handler.context().spanId() + "-01");
	}

	@Test
	void theHttpProviderReceivesTheTraceOfTheAppend() throws IOException {
		String table = "traced_http_outbox";
		List<String> traceparents = new CopyOnWriteArrayList<>();
		HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
		server.createContext("/charges", (exchange) -> {
			traceparents.add(String.valueOf(exchange.getRequestHeaders().getFirst("traceparent")));
			exchange.sendResponseHeaders(201, -1);
			exchange.close();
		});
		server.start();
		try {
			RestClient client = RestClient.builder()
				.requestFactory(new SimpleClientHttpRequestFactory())
				.baseUrl("http://127.0.0.1:" + server.getAddress().getPort())
				.build();
			HttpOutboxDestination destination = new HttpOutboxDestination("payments",
					new RestClientOutboxSender(client, "/charges"), (Duration) null);
			destination.setTracing(this.tracing.outboxTracing());
			OutboxRelay relay = relay(table, destination);
			Span request = this.tracing.tracer.nextSpan().name("request").start();
			long id;
			try (Tracer.SpanInScope scope = this.tracing.tracer.withSpan(request)) {
				id = append(table, "payments", "evt-http-traced");
			}
			finally {
				request.end();
			}
			relay.runOnce();
			assertThat(status(table, id)).isEqualTo("PUBLISHED");
			MutableSpan send = this.tracing.spansNamed("outbox http send").get(0);
			assertThat(send.parentId()).isEqualTo(request.context().spanId());
			assertThat(send.kind()).isEqualTo(brave.Span.Kind.CLIENT);
			assertThat(traceparents).containsExactly("00-" + request.context().traceId() + "-" + send.id() + "-01");
		}
		finally {
			server.stop(0);
		}
	}

	@Test
	void aRowAppendedWithoutACurrentTraceHasNoTraceHeadersAndIsSentWithoutASpan() {
		String table = "untraced_outbox";
		String topic = topic("untraced");
		OutboxRelay relay = kafkaRelay(table);
		long id = append(table, topic, "evt-untraced");
		assertThat(this.jdbc.queryForObject("SELECT headers FROM " + table + " WHERE id = ?", String.class, id))
			.isNull();
		relay.runOnce();
		assertThat(status(table, id)).isEqualTo("PUBLISHED");
		ConsumerRecord<byte[], byte[]> record = KafkaTopicReader.readAll(this.broker, topic).get(0);
		assertThat(record.headers().headers("traceparent")).isEmpty();
		assertThat(this.tracing.spans).isEmpty();
	}

	@Test
	void aMalformedStoredTraceparentDoesNotStopTheRelayAndIsNotForwarded() {
		String table = "malformed_trace_outbox";
		String topic = topic("malformed-trace");
		OutboxRelay relay = kafkaRelay(table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox.append(OutboxEvent.to(topic)
				.key("order-1")
				.payload(Map.of("n", 1))
				.eventId("evt-malformed")
				.header("traceparent", "00-not-a-trace-context")
				.build()));
		long id = OutboxTestSupport.id(this.dataSource, table, "evt-malformed");
		relay.runOnce();
		assertThat(status(table, id)).isEqualTo("PUBLISHED");
		ConsumerRecord<byte[], byte[]> record = KafkaTopicReader.readAll(this.broker, topic).get(0);
		MutableSpan send = this.tracing.spansNamed(KAFKA_SEND).get(0);
		assertThat(send.parentId()).as("a new trace").isNull();
		assertThat(header(record, "traceparent")).isEqualTo("00-" + send.traceId() + "-" + send.id() + "-01");
	}

	private OutboxRelay kafkaRelay(String table) {
		KafkaOutboxDestination destination = new KafkaOutboxDestination(this.kafka);
		destination.setTracing(this.tracing.outboxTracing());
		return relay(table, destination);
	}

	private OutboxRelay relay(String table, OutboxDestination destination) {
		OutboxTestSupport.createTable(this.dataSource, table);
		return OutboxRelay.builder(this.dataSource).table(table).destination(destination).build();
	}

	private String topic(String name) {
		String topic = TestKafkaBroker.uniqueTopic(name);
		this.broker.addTopics(topic);
		OutboxTestSupport.awaitMetadata(this.kafka, topic);
		return topic;
	}

	private long append(String table, String destination, String eventId) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		outbox.setTracing(this.tracing.outboxTracing());
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox
				.append(OutboxEvent.to(destination).key("order-1").payload(Map.of("n", 1)).eventId(eventId).build()));
		return OutboxTestSupport.id(this.dataSource, table, eventId);
	}

	private Map<String, List<String>> storedHeaders(String table, long id) {
		return HeaderCodec
			.decode(this.jdbc.queryForObject("SELECT headers FROM " + table + " WHERE id = ?", String.class, id));
	}

	private String status(String table, long id) {
		return this.jdbc.queryForObject("SELECT status FROM " + table + " WHERE id = ?", String.class, id);
	}

	private static @Nullable String header(ConsumerRecord<byte[], byte[]> record, String name) {
		Header header = record.headers().lastHeader(name);
		return (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : null;
	}

}
