package dev.idempotency.kafka;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import dev.idempotency.core.EventHeaders;

/**
 * Makes a {@code @KafkaListener} method take effect once per event, however often the
 * event is delivered.
 * <p>
 * Each invocation runs in a database transaction (joined when one is already active, for
 * example because the listener is also {@code @Transactional}). Its first statement
 * inserts the event id into the processed-event table for the consumer group with
 * {@code ON CONFLICT DO NOTHING}: a new event runs the listener, a known event is skipped
 * (and acknowledged). When the listener fails, the mark rolls back with its other writes
 * and the container's error handler sees the exception, so the event is retried, not
 * skipped. {@code Acknowledgment.acknowledge()} takes effect only after the commit.
 * <p>
 * The event id comes from the {@link #eventIdHeader() header} (by default
 * {@value EventHeaders#EVENT_ID}), from an {@link #eventId() expression} over the
 * payload, or, when {@link #useTopicPartitionOffset()} is set, from the record's
 * position. An event without an id fails with a {@link MissingEventIdException}; it is
 * never processed unprotected.
 * <p>
 * Record listeners may take a {@code ConsumerRecord}, a {@code Message<?>}, or a payload
 * with {@code @Header} arguments; batch listeners (as their container delivers batches) a
 * {@code List} of any of these, or {@code ConsumerRecords}. A batch is marked in one
 * statement and the listener receives only the new records, in order. A listener that
 * returns a future or a reactive type is refused: its work would run after the mark had
 * committed; so is one that replies ({@code @SendTo}): a skipped duplicate would never be
 * answered. The listener should do local database work only (plus, for example, an outbox
 * append): a remote call cannot roll back with the transaction.
 *
 * @see IdempotentListenerAdvisor
 * @since 0.1.0
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotentListener {

	/**
	 * Name of the header that carries the event id. When empty, the advisor's default
	 * applies ({@value EventHeaders#EVENT_ID} unless configured otherwise). A listener
	 * that takes a converted payload must declare it as a {@code @Header} argument.
	 * @return the header name
	 */
	String eventIdHeader() default "";

	/**
	 * A SpEL expression evaluated against the payload (the root object) whose value is
	 * the event id, for example {@code "orderId"}. Takes precedence over the header.
	 * @return the expression, or empty to read the header
	 */
	String eventId() default "";

	/**
	 * Whether to use the record's {@code topic-partition@offset} as the event id. This
	 * only detects redelivery of the same record, not an event published twice: opt in
	 * only when producers cannot supply an id.
	 * @return whether to use the record position as the event id
	 */
	boolean useTopicPartitionOffset() default false;

	/**
	 * The consumer group to record events for. When empty, the group of the listener
	 * container is used.
	 * @return the consumer group
	 */
	String consumerGroup() default "";

	/**
	 * Name of the {@code PlatformTransactionManager} bean that runs the transaction,
	 * which must manage the processed-event store's {@code DataSource} (the startup fails
	 * otherwise). When empty, the advisor's default applies: the configured name, or the
	 * only transaction manager of that {@code DataSource} (the primary one among
	 * several).
	 * @return the transaction manager bean name
	 */
	String transactionManager() default "";

}
