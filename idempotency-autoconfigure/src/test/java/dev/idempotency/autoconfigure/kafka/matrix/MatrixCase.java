package dev.idempotency.autoconfigure.kafka.matrix;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.ConsumerRecordsByAnnotation;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.ConsumerRecordsByClass;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.ConsumerRecordsByPlaceholder;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.ConsumerRecordsUndeclared;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.MessageListener;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.PayloadListByAnnotation;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.PayloadListByClass;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.PayloadListByPlaceholder;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.PayloadListUndeclared;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.RecordListByAnnotation;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.RecordListByClass;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.RecordListByPlaceholder;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.RecordListUndeclared;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.RecordListener;

import org.springframework.kafka.listener.ContainerProperties.AckMode;

/**
 * One combination of the settings a user turns on the Kafka side, and what it must do:
 * take every good record's effect exactly once and recover the bad ones without stalling,
 * or refuse to start with a message.
 *
 * @param shape what the listener takes
 * @param declaration how its container is made a batch one
 * @param transactions whether the container runs Kafka transactions
 * @param ackMode the container's ack mode
 * @param errorHandling what recovers a failed record
 * @param database the database of the processed events and of the listener's writes
 */
record MatrixCase(Shape shape, Declaration declaration, Transactions transactions, AckMode ackMode,
		ErrorHandling errorHandling, Database database) {

	/** The ack modes of the matrix. */
	static final List<AckMode> ACK_MODES = List.of(AckMode.RECORD, AckMode.BATCH, AckMode.MANUAL,
			AckMode.MANUAL_IMMEDIATE);

	/**
	 * The listener's signature.
	 */
	enum Shape {

		RECORD("ConsumerRecord", false), MESSAGE("Message<String>", false), CONSUMER_RECORDS("ConsumerRecords", true),
		RECORD_LIST("List<ConsumerRecord>", true), PAYLOAD_LIST("List<String> + converted headers", true);

		final String label;

		final boolean batch;

		Shape(String label, boolean batch) {
			this.label = label;
			this.batch = batch;
		}

	}

	/**
	 * How the listener's container is declared to deliver batches.
	 */
	enum Declaration {

		NONE("not declared a batch"), ANNOTATION("batch = \"true\""), PLACEHOLDER("batch = \"${...}\""),
		CLASS_LEVEL("class-level @KafkaListener(batch = \"true\")"), PROPERTY("spring.kafka.listener.type=batch");

		final String label;

		Declaration(String label) {
			this.label = label;
		}

	}

	/**
	 * Whether the container runs Kafka transactions
	 * ({@code spring.kafka.producer.transaction-id-prefix}).
	 */
	enum Transactions {

		OFF("no container transactions"), KAFKA("Kafka transactions");

		final String label;

		Transactions(String label) {
			this.label = label;
		}

	}

	/**
	 * What recovers a record that fails.
	 */
	enum ErrorHandling {

		DEFAULT("spring-kafka's default error handling"), DEAD_LETTER("dead-letter recoverer"),
		RETRY_TOPICS("retry topics");

		final String label;

		ErrorHandling(String label) {
			this.label = label;
		}

	}

	/**
	 * The database of the processed events and of the listener's writes.
	 */
	enum Database {

		POSTGRESQL("PostgreSQL"), MARIADB("MariaDB");

		final String label;

		Database(String label) {
			this.label = label;
		}

	}

	/**
	 * Every combination that the settings can form: a record listener is not declared a
	 * batch one; a batch listener is declared in every way, none included.
	 */
	static List<MatrixCase> all() {
		List<MatrixCase> all = new ArrayList<>();
		for (Shape shape : Shape.values()) {
			for (Declaration declaration : Declaration.values()) {
				if (!shape.batch && declaration != Declaration.NONE) {
					continue;
				}
				for (Transactions transactions : Transactions.values()) {
					for (AckMode ackMode : ACK_MODES) {
						for (ErrorHandling errorHandling : ErrorHandling.values()) {
							for (Database database : Database.values()) {
								all.add(new MatrixCase(shape, declaration, transactions, ackMode, errorHandling,
										database));
							}
						}
					}
				}
			}
		}
		return all;
	}

	/**
	 * A selection of the combinations: those that run, so that every pair of values of
	 * two settings runs at least once, and those that must refuse to start, so that each
	 * shape meets each refusing declaration and ack mode once. Picked greedily (the
	 * combination that covers the most pairs not yet covered, the first of equals), so
	 * that the selection is the same every time.
	 */
	static List<MatrixCase> pairwise() {
		List<MatrixCase> running = all().stream().filter((matrixCase) -> !matrixCase.refuses()).toList();
		List<MatrixCase> refusing = all().stream().filter(MatrixCase::refuses).toList();
		List<MatrixCase> chosen = new ArrayList<>(cover(running, MatrixCase::pairs));
		chosen.addAll(cover(refusing, MatrixCase::refusingPairs));
		return chosen;
	}

	private static List<MatrixCase> cover(List<MatrixCase> candidates, Function<MatrixCase, List<String>> pairs) {
		Set<String> uncovered = new LinkedHashSet<>();
		candidates.forEach((matrixCase) -> uncovered.addAll(pairs.apply(matrixCase)));
		List<MatrixCase> chosen = new ArrayList<>();
		while (!uncovered.isEmpty()) {
			MatrixCase best = null;
			int bestCount = 0;
			for (MatrixCase candidate : candidates) {
				int count = (int) pairs.apply(candidate).stream().filter(uncovered::contains).count();
				if (count > bestCount) {
					best = candidate;
					bestCount = count;
				}
			}
			if (best == null) {
				break;
			}
			chosen.add(best);
			uncovered.removeAll(pairs.apply(best));
		}
		return chosen;
	}

	private List<String> pairs() {
		List<String> values = List.of("shape=" + this.shape, "declaration=" + this.declaration,
				"transactions=" + this.transactions, "ack=" + this.ackMode, "errors=" + this.errorHandling,
				"database=" + this.database);
		List<String> pairs = new ArrayList<>();
		for (int i = 0; i < values.size(); i++) {
			for (int j = i + 1; j < values.size(); j++) {
				pairs.add(values.get(i) + "," + values.get(j));
			}
		}
		return pairs;
	}

	private List<String> refusingPairs() {
		return refusals().stream().map((refusal) -> this.shape + "," + refusal).toList();
	}

	/**
	 * What the startup may say when the combination must refuse to start (one of these,
	 * as the checks that refuse it run in no set order), or an empty list when it must
	 * run.
	 */
	List<String> refusals() {
		if (!this.shape.batch) {
			return List.of();
		}
		List<String> refusals = new ArrayList<>();
		if (this.declaration == Declaration.NONE) {
			refusals.add("it takes a batch");
		}
		else if (this.declaration == Declaration.PLACEHOLDER) {
			refusals.add("spring-kafka reads a @KafkaListener batch attribute with a placeholder as false");
		}
		else if (this.declaration == Declaration.CLASS_LEVEL && this.shape != Shape.PAYLOAD_LIST) {
			refusals.add("a class-level @KafkaListener hands a batch to its @KafkaHandler as a list of converted");
		}
		if (this.errorHandling == ErrorHandling.RETRY_TOPICS && this.declaration != Declaration.NONE
				&& this.declaration != Declaration.PLACEHOLDER) {
			// spring-kafka's retry topics take record listeners only.
			refusals.add("BatchMessagingMessageListenerAdapter is not assignable from MessageListener");
		}
		if (refusals.isEmpty() && this.ackMode == AckMode.RECORD) {
			refusals.add("Cannot use AckMode.RECORD with a batch listener");
		}
		return refusals;
	}

	boolean refuses() {
		return !refusals().isEmpty();
	}

	Class<?> listener() {
		return switch (this.shape) {
			case RECORD -> RecordListener.class;
			case MESSAGE -> MessageListener.class;
			case CONSUMER_RECORDS -> switch (this.declaration) {
				case ANNOTATION -> ConsumerRecordsByAnnotation.class;
				case PLACEHOLDER -> ConsumerRecordsByPlaceholder.class;
				case CLASS_LEVEL -> ConsumerRecordsByClass.class;
				case NONE, PROPERTY -> ConsumerRecordsUndeclared.class;
			};
			case RECORD_LIST -> switch (this.declaration) {
				case ANNOTATION -> RecordListByAnnotation.class;
				case PLACEHOLDER -> RecordListByPlaceholder.class;
				case CLASS_LEVEL -> RecordListByClass.class;
				case NONE, PROPERTY -> RecordListUndeclared.class;
			};
			case PAYLOAD_LIST -> switch (this.declaration) {
				case ANNOTATION -> PayloadListByAnnotation.class;
				case PLACEHOLDER -> PayloadListByPlaceholder.class;
				case CLASS_LEVEL -> PayloadListByClass.class;
				case NONE, PROPERTY -> PayloadListUndeclared.class;
			};
		};
	}

	@Override
	public String toString() {
		return this.shape.label + ", " + this.declaration.label + ", " + this.transactions.label + ", ack "
				+ this.ackMode + ", " + this.errorHandling.label + ", " + this.database.label;
	}

}
