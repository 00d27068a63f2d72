package dev.idempotency.outbox;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import brave.Tracing;
import brave.baggage.BaggageField;
import brave.baggage.BaggagePropagation;
import brave.baggage.BaggagePropagationConfig;
import brave.handler.MutableSpan;
import brave.handler.SpanHandler;
import brave.propagation.ThreadLocalCurrentTraceContext;
import dev.idempotency.outbox.tracing.MicrometerOutboxTracing;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.brave.bridge.BraveBaggageManager;
import io.micrometer.tracing.brave.bridge.BraveCurrentTraceContext;
import io.micrometer.tracing.brave.bridge.BravePropagator;
import io.micrometer.tracing.brave.bridge.BraveTracer;
import io.micrometer.tracing.brave.bridge.W3CPropagation;
import io.micrometer.tracing.propagation.Propagator;

/**
 * A real Brave tracer behind Micrometer Tracing, wired as Spring Boot wires it by default
 * (W3C propagation, a remote baggage field), whose finished spans are kept in memory.
 */
final class TestTracing implements AutoCloseable {

	static final String BAGGAGE_FIELD = "tenant";

	final List<MutableSpan> spans = new CopyOnWriteArrayList<>();

	final Tracer tracer;

	final Propagator propagator;

	private final Tracing tracing;

	TestTracing() {
		BraveBaggageManager baggage = new BraveBaggageManager(List.of(), List.of(BAGGAGE_FIELD));
		this.tracing = Tracing.newBuilder()
			.traceId128Bit(true)
			.currentTraceContext(ThreadLocalCurrentTraceContext.create())
			.propagationFactory(BaggagePropagation.newFactoryBuilder(new W3CPropagation(baggage, List.of()))
				.add(BaggagePropagationConfig.SingleBaggageField.remote(BaggageField.create(BAGGAGE_FIELD)))
				.build())
			.addSpanHandler(new SpanHandler() {

				@Override
				public boolean end(brave.propagation.TraceContext context, MutableSpan span, Cause cause) {
					TestTracing.this.spans.add(span);
					return true;
				}

			})
			.build();
		this.tracer = new BraveTracer(this.tracing.tracer(),
				new BraveCurrentTraceContext(this.tracing.currentTraceContext()), baggage);
		this.propagator = new BravePropagator(this.tracing);
	}

	MicrometerOutboxTracing outboxTracing() {
		return new MicrometerOutboxTracing(this.tracer, this.propagator);
	}

	List<MutableSpan> spansNamed(String name) {
		return this.spans.stream().filter((span) -> name.equals(span.name())).toList();
	}

	@Override
	public void close() {
		this.tracing.close();
	}

}
