package dev.idempotency.outbox;

import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * Carries the trace context of the transaction that appends a row to the sends of that
 * row, so that a trace goes on from the request that appended to the consumer or provider
 * that receives, however long the row waits in the outbox.
 * <p>
 * At {@code append}, the {@link #currentContext() current context} (and its baggage) is
 * stored with the row, among its headers, in the form of the tracer's propagation, W3C
 * {@code traceparent}, {@code tracestate} and {@code baggage} by default. At each send,
 * the destination {@link #startSend starts a span} that is a child of the stored context,
 * sends the row with that span's context in place of the stored one, and ends it with the
 * outcome of the send. A row appended without a current trace is stored and sent without
 * trace headers and without a span.
 * <p>
 * {@link #NONE} does nothing;
 * {@code dev.idempotency.outbox.tracing.MicrometerOutboxTracing} implements it with
 * Micrometer Tracing.
 *
 * @since 0.1.0
 */
public interface OutboxTracing {

	/** Tracing that stores no context and starts no span. */
	OutboxTracing NONE = new OutboxTracing() {

		@Override
		public Map<String, String> currentContext() {
			return Map.of();
		}

		@Override
		public Send startSend(OutboxMessage message, String destinationKind) {
			return Send.untraced(message);
		}

		@Override
		public String toString() {
			return "OutboxTracing.NONE";
		}

	};

	/**
	 * Return the headers that carry the current trace context and baggage, to be stored
	 * with a row appended now.
	 * @return the headers, empty when no trace is current
	 */
	Map<String, String> currentContext();

	/**
	 * Start the span of one send of a message: a child of the context stored in its
	 * headers. A message without a stored context gets no span; one whose stored context
	 * cannot be read starts a new trace and never fails the send.
	 * @param message the message as claimed
	 * @param destinationKind the kind of destination, such as {@code kafka} or
	 * {@code http}, for the span's name
	 * @return the send, to {@link Send#open() open} around the call that sends and to
	 * {@link Send#end end} when its outcome is known
	 */
	Send startSend(OutboxMessage message, String destinationKind);

	/**
	 * One traced send of a message.
	 */
	interface Send {

		/**
		 * Return the message to send: the claimed one, with the send's trace context in
		 * place of the stored one.
		 * @return the message to send
		 */
		OutboxMessage message();

		/**
		 * Make the send's span the current one on this thread, so that instrumented
		 * clients (a {@code RestClient} with observations) create their spans as its
		 * children.
		 * @return the scope to close once the call that sends has returned
		 */
		Scope open();

		/**
		 * End the send's span.
		 * @param failure the failure of the send, or {@code null} when it succeeded
		 */
		void end(@Nullable Throwable failure);

		/**
		 * Return a send without a span.
		 * @param message the message, sent as it is
		 * @return the send
		 */
		static Send untraced(OutboxMessage message) {
			return new Send() {

				@Override
				public OutboxMessage message() {
					return message;
				}

				@Override
				public Scope open() {
					return () -> {
					};
				}

				@Override
				public void end(@Nullable Throwable failure) {
				}

			};
		}

	}

	/**
	 * The scope of a send's span on a thread.
	 */
	interface Scope extends AutoCloseable {

		@Override
		void close();

	}

}
