package dev.idempotency.outbox.tracing;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxTracing;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * {@link OutboxTracing} with Micrometer Tracing: the {@link Propagator} writes the
 * current context into the row's headers at append (with Spring Boot's defaults, W3C
 * {@code traceparent}, {@code tracestate} when there is one, and {@code baggage} for the
 * remote baggage fields), and reads it back at each send, whose span is a child of it:
 * one trace from the request that appended to whatever receives the row, the time the row
 * waited in the outbox included. A child rather than a span of its own trace linked to
 * the stored context, because a trace is what users follow from a request to its effects;
 * a re-send is a second child of the same context.
 * <p>
 * The headers that the propagator uses ({@link Propagator#fields()}) are never sent as
 * stored: the send's own context replaces them. Stored headers that cannot be read as a
 * context (a malformed {@code traceparent}, say) start a new trace and do not fail the
 * send.
 *
 * @since 0.1.0
 */
public final class MicrometerOutboxTracing implements OutboxTracing {

	private static final Log logger = LogFactory.getLog(MicrometerOutboxTracing.class);

	private final Tracer tracer;

	private final Propagator propagator;

	private final Set<String> fields;

	/**
	 * Create tracing on a tracer and its propagator, typically Spring Boot's beans.
	 * @param tracer the tracer
	 * @param propagator the propagator of the tracer's context
	 */
	public MicrometerOutboxTracing(Tracer tracer, Propagator propagator) {
		Assert.notNull(tracer, "tracer must not be null");
		Assert.notNull(propagator, "propagator must not be null");
		this.tracer = tracer;
		this.propagator = propagator;
		this.fields = propagator.fields()
			.stream()
			.map((field) -> field.toLowerCase(Locale.ROOT))
			.collect(Collectors.toUnmodifiableSet());
	}

	@Override
	public Map<String, String> currentContext() {
		TraceContext context = this.tracer.currentTraceContext().context();
		if (context == null) {
			return Map.of();
		}
		Map<String, String> headers = new LinkedHashMap<>();
		this.propagator.inject(context, headers, (carrier, name, value) -> {
			if (carrier != null) {
				carrier.put(name, value);
			}
		});
		return headers;
	}

	@Override
	public Send startSend(OutboxMessage message, String destinationKind) {
		Assert.notNull(message, "message must not be null");
		Map<String, String> stored = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
		Map<String, String> others = new LinkedHashMap<>();
		message.headers().forEach((name, value) -> {
			if (this.fields.contains(name.toLowerCase(Locale.ROOT))) {
				stored.put(name, value);
			}
			else {
				others.put(name, value);
			}
		});
		if (stored.isEmpty()) {
			return Send.untraced(message);
		}
		Span span = start(message, destinationKind, stored);
		this.propagator.inject(span.context(), others, (carrier, name, value) -> {
			if (carrier != null) {
				carrier.put(name, value);
			}
		});
		OutboxMessage traced = new OutboxMessage(message.id(), message.destination(), message.messageKey(),
				message.payload(), others, message.eventId(), message.eventType(), message.idempotencyKey(),
				message.attempts(), message.createdAt());
		return new SpanSend(this.tracer, span, traced);
	}

	private Span start(OutboxMessage message, String destinationKind, Map<String, String> stored) {
		Span.Builder builder;
		try {
			builder = this.propagator.extract(stored, (carrier, name) -> carrier.get(name));
		}
		catch (RuntimeException ex) {
			// A tracer may throw on a context it cannot read: the send goes on, in a new
			// trace, rather than fail for ever.
			logger.debug("Cannot read the trace context stored with outbox row " + message.id(), ex);
			builder = this.tracer.spanBuilder().setNoParent();
		}
		Span span = builder.name("outbox " + destinationKind + " send")
			.kind((destinationKind.equals("http")) ? Span.Kind.CLIENT : Span.Kind.PRODUCER)
			.tag("outbox.destination", message.destination())
			.tag("outbox.event-id", message.eventId())
			.tag("outbox.row-id", message.id())
			.tag("outbox.attempt", message.attempts() + 1L)
			.start();
		if (span.context().parentId() == null && logger.isDebugEnabled()) {
			logger.debug("The trace context stored with outbox row " + message.id()
					+ " could not be read: its send starts a new trace");
		}
		return span;
	}

	@Override
	public String toString() {
		return "MicrometerOutboxTracing[fields=" + this.fields + "]";
	}

	private record SpanSend(Tracer tracer, Span span, OutboxMessage message) implements Send {

		@Override
		public Scope open() {
			Tracer.SpanInScope scope = this.tracer.withSpan(this.span);
			return scope::close;
		}

		@Override
		public void end(@Nullable Throwable failure) {
			if (failure != null) {
				this.span.error(failure);
			}
			this.span.end();
		}

	}

}
