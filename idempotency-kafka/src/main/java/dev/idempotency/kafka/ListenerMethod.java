package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import dev.idempotency.core.internal.Sha256;
import dev.idempotency.kafka.ListenerSignature.DataKind;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.util.StringUtils;

/**
 * An {@link IdempotentListener @IdempotentListener} method as it runs: its signature,
 * where its event ids come from, whether it receives batches, and the settings of its
 * annotation. Made once, at startup, so that a listener that cannot yield an id, or whose
 * signature does not fit its container, fails the startup rather than its first record.
 */
final class ListenerMethod {

	private static final String FIXES = "Have the producer set the header (the outbox does), name another header "
			+ "with @IdempotentListener(eventIdHeader = \"...\") or idempotency.kafka.event-id-header, compute the id "
			+ "with @IdempotentListener(eventId = \"<SpEL over the payload>\"), or, where producers cannot give one, "
			+ "use the record's position with @IdempotentListener(useTopicPartitionOffset = true), which only "
			+ "recognises the same record delivered again";

	private final ListenerSignature signature;

	private final EventIdSource ids;

	private final boolean batch;

	private final @Nullable String consumerGroup;

	private final @Nullable String declaredGroup;

	private final @Nullable String transactionManager;

	private ListenerMethod(ListenerSignature signature, EventIdSource ids, boolean batch,
			@Nullable String consumerGroup, @Nullable String declaredGroup, @Nullable String transactionManager) {
		this.signature = signature;
		this.ids = ids;
		this.batch = batch;
		this.consumerGroup = consumerGroup;
		this.declaredGroup = declaredGroup;
		this.transactionManager = transactionManager;
	}

	/**
	 * Make a listener method of a signature and what its annotations declare.
	 * @throws IllegalStateException for a listener that cannot be made idempotent
	 */
	static ListenerMethod of(ListenerSignature signature, IdempotentListener annotation, String defaultHeaderName,
			ListenerDeclaration declaration) {
		if (declaration.replies()) {
			throw signature.invalid("it replies (@SendTo): a duplicate is skipped, so a requester that sent its "
					+ "request again would never get an answer, and a reply lost after the commit would never be "
					+ "sent again.",
					"Send the reply from the listener through the outbox instead, in its transaction.");
		}
		EventIdSource ids = EventIdSource.of(annotation, defaultHeaderName);
		boolean batch = isBatch(signature, declaration);
		ListenerMethod method = new ListenerMethod(signature, ids, batch,
				StringUtils.hasText(annotation.consumerGroup()) ? annotation.consumerGroup() : null,
				declaration.getGroup(),
				StringUtils.hasText(annotation.transactionManager()) ? annotation.transactionManager() : null);
		method.validateSources(declaration);
		return method;
	}

	/**
	 * Whether the listener receives batches: as its container delivers them, provided
	 * that its signature takes them.
	 */
	private static boolean isBatch(ListenerSignature signature, ListenerDeclaration declaration) {
		Boolean declared = declaration.isBatch();
		if (declared == null) {
			if (signature.takesList() && !signature.takesOnlyBatches()) {
				throw signature.invalid(
						"it takes a List of payloads, and whether its container delivers batches "
								+ "cannot be told (it has no @KafkaListener, or a container factory of another kind).",
						"Declare @KafkaListener(batch = \"true\") or batch = \"false\".");
			}
			return signature.takesOnlyBatches();
		}
		if (declared) {
			if (declaration.isClassLevel() && signature.takesList()
					&& signature.getDataKind() != ListenerSignature.DataKind.PAYLOAD) {
				throw signature.invalid(
						"a class-level @KafkaListener hands a batch to its @KafkaHandler as a list of "
								+ "converted payloads, never as records or messages.",
						"Take a List of payloads and "
								+ "@Header(KafkaHeaders.BATCH_CONVERTED_HEADERS), or put @KafkaListener on the method.");
			}
			// A record signature in a batch container receives one record per call (a
			// BatchToRecordAdapter), or fails in spring-kafka before it is invoked.
			return signature.takesList();
		}
		if (signature.takesOnlyBatches()) {
			boolean placeholder = declaration.hasUnresolvedBatchAttribute();
			throw signature.invalid("it takes a batch (a List of records or messages, or the converted headers of a "
					+ "batch), but its container delivers one record at a time"
					+ (placeholder
							? ": spring-kafka reads a @KafkaListener batch attribute with a placeholder as false, "
									+ "without resolving it."
							: "."),
					(placeholder ? "Write batch = \"true\", or leave it empty and set spring.kafka.listener.type=batch"
							: "Declare @KafkaListener(batch = \"true\"), set spring.kafka.listener.type=batch")
							+ " (the container factory's batchListener)"
							+ (placeholder ? "." : ", or take one record."));
		}
		return false;
	}

	private void validateSources(ListenerDeclaration declaration) {
		if (this.signature.getDataKind() != DataKind.PAYLOAD) {
			return;
		}
		boolean positions = this.signature.headerIndex(KafkaHeaders.RECEIVED_TOPIC) >= 0
				&& this.signature.headerIndex(KafkaHeaders.RECEIVED_PARTITION) >= 0
				&& this.signature.headerIndex(KafkaHeaders.OFFSET) >= 0;
		boolean converted = this.signature.headerIndex(KafkaHeaders.BATCH_CONVERTED_HEADERS) >= 0;
		if (this.ids.isPosition() && !positions) {
			throw this.signature.invalid("useTopicPartitionOffset needs the record position.",
					"Take a ConsumerRecord or a Message, or add @Header(KafkaHeaders.RECEIVED_TOPIC), "
							+ "@Header(KafkaHeaders.RECEIVED_PARTITION) and @Header(KafkaHeaders.OFFSET) arguments.");
		}
		if (this.ids.isHeader() && this.signature.headerIndex(this.ids.getHeaderName()) == -1
				&& !(this.batch && converted)) {
			throw this.signature.invalid(
					(this.batch ? "a batch of payloads needs @Header(KafkaHeaders.BATCH_CONVERTED_HEADERS)"
							: "a payload needs @Header(\"" + this.ids.getHeaderName() + "\")")
							+ " to read the event id.",
					"Add it, take ConsumerRecord or Message, or set eventId to an expression.");
		}
		if (this.batch && declaration.isTransactional() && !positions) {
			throw this.signature.invalid(
					"in a container with a transaction manager, a record of a batch that "
							+ "cannot be processed is recovered by the library, which needs the record's position.",
					"Add @Header(KafkaHeaders.RECEIVED_TOPIC) List<String>, @Header(KafkaHeaders.RECEIVED_PARTITION) "
							+ "List<Integer> and @Header(KafkaHeaders.OFFSET) List<Long> arguments, or take the records.");
		}
	}

	/**
	 * Check the value a listener returned, which its declared type allowed to be
	 * asynchronous.
	 */
	void checkResult(@Nullable Object result) {
		if (result != null && ListenerSignature.isAsynchronous(result.getClass())) {
			Method method = getMethod();
			throw new AsynchronousResultException(
					"@IdempotentListener method " + method.getDeclaringClass().getName() + "." + method.getName()
							+ " returned a " + result.getClass().getName() + ": " + ListenerSignature.ASYNCHRONOUS
							+ "; the event was not marked processed. " + ListenerSignature.RETURN_VOID);
		}
	}

	Method getMethod() {
		return this.signature.getMethod();
	}

	String name() {
		return this.signature.name();
	}

	boolean isBatch() {
		return this.batch;
	}

	DataKind getDataKind() {
		return this.signature.getDataKind();
	}

	int getDataIndex() {
		return this.signature.getDataIndex();
	}

	int getAcknowledgmentIndex() {
		return this.signature.getAcknowledgmentIndex();
	}

	List<Integer> getHeaderListIndexes() {
		return this.signature.getHeaderListIndexes();
	}

	/**
	 * The group its annotation records events under, or {@code null} for the container's.
	 */
	@Nullable String getConsumerGroup() {
		return this.consumerGroup;
	}

	/**
	 * The group its main container is declared with, or {@code null} when that cannot be
	 * told.
	 */
	@Nullable String getDeclaredGroup() {
		return this.declaredGroup;
	}

	@Nullable String getTransactionManager() {
		return this.transactionManager;
	}

	/**
	 * Return the event id of a record listener's invocation.
	 * @throws MissingEventIdException when the record has none
	 */
	String eventId(@Nullable Object[] arguments) {
		return idAt(arguments, arguments[getDataIndex()], -1);
	}

	/**
	 * Return the event ids of a batch listener's invocation, one per record in order,
	 * {@code null} for a record that has none.
	 */
	BatchIds eventIds(@Nullable Object[] arguments) {
		List<?> records = records(arguments);
		List<@Nullable String> ids = new ArrayList<>(records.size());
		List<@Nullable MissingEventIdException> missing = new ArrayList<>(records.size());
		for (int i = 0; i < records.size(); i++) {
			try {
				ids.add(idAt(arguments, records.get(i), i));
				missing.add(null);
			}
			catch (MissingEventIdException ex) {
				ids.add(null);
				missing.add(ex);
			}
		}
		return new BatchIds(ids, missing);
	}

	/**
	 * Return a fingerprint of the payload of a record, a message or a payload argument:
	 * the first eight bytes of the SHA-256 of a {@code String} (UTF-8) or {@code byte[]}
	 * payload, {@code null} for a payload converted to another type, which has no bytes
	 * to compare without serializing it again.
	 */
	@Nullable Long payloadFingerprint(@Nullable Object data) {
		Object payload = this.signature.payloadOf(data);
		byte[] bytes = (payload instanceof byte[] raw) ? raw
				: (payload instanceof String text) ? text.getBytes(StandardCharsets.UTF_8) : null;
		if (bytes == null) {
			return null;
		}
		return ByteBuffer.wrap(Sha256.of(bytes)).getLong();
	}

	/**
	 * Return the records (or messages, or payloads) of a batch listener's invocation, in
	 * the order the listener sees them.
	 */
	List<?> records(@Nullable Object[] arguments) {
		return this.signature.records(arguments);
	}

	/**
	 * Return the record at a position of a batch listener's invocation, for a recoverer:
	 * the record itself, or one rebuilt from a message's or a payload's headers with the
	 * converted payload as its value.
	 */
	ConsumerRecord<?, ?> recordAt(@Nullable Object[] arguments, int index) {
		return BatchArguments.recordAt(this.signature, arguments, index);
	}

	private String idAt(@Nullable Object[] arguments, @Nullable Object data, int index) {
		String id;
		try {
			id = this.ids.idAt(this.signature, arguments, data, index);
		}
		catch (MissingEventIdException ex) {
			throw missingId(index, ex.getMessage());
		}
		if (!StringUtils.hasText(id)) {
			throw missingId(index, null);
		}
		return id;
	}

	MissingEventIdException missingId(int index, @Nullable String problem) {
		return new MissingEventIdException("No event id (" + this.ids.describe() + ") for "
				+ ((index >= 0) ? "record " + index + " of the batch of " : "a record of ") + name()
				+ ((problem != null) ? ": it " + problem : "") + "; it is not processed. " + FIXES);
	}

	/**
	 * The event ids of a batch, one per record: the id, or the failure of a record that
	 * has none.
	 *
	 * @param ids the ids, in order, {@code null} where there is none
	 * @param missing the failure of each record without an id, {@code null} elsewhere
	 */
	record BatchIds(List<@Nullable String> ids, List<@Nullable MissingEventIdException> missing) {

		int firstMissing() {
			return this.ids.indexOf(null);
		}

	}

}
