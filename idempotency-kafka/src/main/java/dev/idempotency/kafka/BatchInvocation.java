package dev.idempotency.kafka;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.IntStream;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.kafka.ListenerMethod.BatchIds;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.kafka.core.KafkaResourceHolder;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * One invocation of a batch listener: one statement marks the batch, the listener
 * receives only its new records, in order, and a record that has no event id or that the
 * listener reports failed is dealt with alone.
 * <p>
 * Without a container transaction the container's error handler deals with such a record:
 * it commits the offsets before it, recovers or retries it, and delivers the records
 * after it again. The records before it must then have taken effect, so they are
 * processed first in a transaction of their own. A container transaction (Kafka's) cannot
 * do that: on any failure the after-rollback processor delivers the whole batch again,
 * and the same record fails again, for ever. So there the library does not fail the
 * batch: it hands such records to the recoverer itself and processes the others.
 */
final class BatchInvocation {

	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	/** How many skipped ids a debug line names. */
	private static final int LOGGED_IDS = 10;

	private final ListenerInfrastructure infrastructure;

	private final MethodInvocation invocation;

	private final @Nullable ProxyMethodInvocation template;

	private final @Nullable Object[] delivered;

	private final ListenerMethod method;

	private final String consumerGroup;

	private final TransactionTemplate transaction;

	private final BatchIds ids;

	private BatchInvocation(ListenerInfrastructure infrastructure, MethodInvocation invocation, ListenerMethod method,
			String consumerGroup, TransactionTemplate transaction) {
		this.infrastructure = infrastructure;
		this.invocation = invocation;
		// Cloned before anything proceeds, so that a run of some of the records goes
		// through the advice after this one, as the first run does.
		this.template = (invocation instanceof ProxyMethodInvocation proxyInvocation)
				? (ProxyMethodInvocation) proxyInvocation.invocableClone() : null;
		this.delivered = invocation.getArguments().clone();
		this.method = method;
		this.consumerGroup = consumerGroup;
		this.transaction = transaction;
		this.ids = method.eventIds(this.delivered);
	}

	static @Nullable Object invoke(ListenerInfrastructure infrastructure, MethodInvocation invocation,
			ListenerMethod method, String consumerGroup, TransactionTemplate transaction) throws Throwable {
		BatchInvocation batch = new BatchInvocation(infrastructure, invocation, method, consumerGroup, transaction);
		return inContainerTransaction() ? batch.invokeInContainerTransaction() : batch.invoke();
	}

	/**
	 * Whether the container runs the listener in a transaction: a database one, or a
	 * Kafka one, whose transaction manager binds its producer without synchronization.
	 */
	private static boolean inContainerTransaction() {
		return TransactionSynchronizationManager.isActualTransactionActive()
				|| TransactionSynchronizationManager.getResourceMap()
					.values()
					.stream()
					.anyMatch(KafkaResourceHolder.class::isInstance);
	}

	/**
	 * Without a container transaction: a record without an event id, or the one the
	 * listener reports, is left to the error handler once the records before it have
	 * taken effect.
	 */
	private @Nullable Object invoke() throws Throwable {
		int missing = this.ids.firstMissing();
		if (missing == -1) {
			try {
				return markAndProceed(this.invocation, this.invocation.getArguments(), positions(0, size()), false);
			}
			catch (PartialBatchFailure failure) {
				throw afterPartialFailure(failure);
			}
		}
		MissingEventIdException cause = this.ids.missing().get(missing);
		if (missing > 0) {
			if (this.template == null) {
				throw cause;
			}
			// The error handler commits the offsets before the record: they must have
			// taken effect. Their acknowledgment would commit the record's offset too.
			try {
				markAndProceed(rerun(), copy(), positions(0, missing), true);
			}
			catch (PartialBatchFailure failure) {
				throw afterPartialFailure(failure);
			}
		}
		throw new BatchListenerFailedException(cause.getMessage(), cause, missing);
	}

	/**
	 * In a container transaction: the records without an event id and those the listener
	 * reports failed are recovered by the library, the others processed once, and the
	 * batch completes, so that the container commits all of its offsets. Where the
	 * library's transaction joins the container's, a reported record fails the batch as a
	 * whole: the records before it cannot commit on their own.
	 */
	private @Nullable Object invokeInContainerTransaction() throws Throwable {
		Map<Integer, Exception> recovered = new TreeMap<>();
		List<Integer> candidates = new ArrayList<>();
		for (int i = 0; i < size(); i++) {
			MissingEventIdException missing = this.ids.missing().get(i);
			if (missing != null) {
				recovered.put(i, missing);
			}
			else {
				candidates.add(i);
			}
		}
		Object result = null;
		boolean completed = false;
		boolean first = true;
		while (!candidates.isEmpty()) {
			try {
				result = first ? markAndProceed(this.invocation, this.invocation.getArguments(), candidates, false)
						: markAndProceed(rerun(), copy(), candidates, false);
				completed = true;
				break;
			}
			catch (PartialBatchFailure failure) {
				int[] kept = failure.kept;
				if (!failure.newTransaction || this.template == null || failure.failedIndex < 0
						|| failure.failedIndex >= kept.length) {
					throw failure.reported;
				}
				if (failure.failedIndex > 0) {
					try {
						markAndProceed(rerun(), copy(), Arrays.stream(kept, 0, failure.failedIndex).boxed().toList(),
								false);
					}
					catch (PartialBatchFailure again) {
						throw again.reported;
					}
				}
				int failed = kept[failure.failedIndex];
				recovered.put(failed, cause(failure.reported));
				candidates = candidates.stream().filter((candidate) -> candidate > failed).toList();
			}
			first = false;
		}
		for (Map.Entry<Integer, Exception> record : recovered.entrySet()) {
			this.infrastructure.recover(this.method.recordAt(this.delivered, record.getKey()), this.consumerGroup,
					record.getValue());
		}
		int acknowledgmentIndex = this.method.getAcknowledgmentIndex();
		if (!completed && acknowledgmentIndex >= 0
				&& this.delivered[acknowledgmentIndex] instanceof Acknowledgment ack) {
			// Nothing left for the listener to acknowledge: every record is recovered.
			ack.acknowledge();
		}
		return result;
	}

	/**
	 * Mark the records at the given positions in one statement and pass the new ones to
	 * the listener, in the library's transaction.
	 * @throws PartialBatchFailure when the listener reports a record failed
	 */
	private @Nullable Object markAndProceed(MethodInvocation run, @Nullable Object[] arguments, List<Integer> positions,
			boolean ignoreAcknowledgment) throws Throwable {
		if (positions.isEmpty()) {
			return run.proceed();
		}
		if (ignoreAcknowledgment) {
			BatchArguments.ignoreAcknowledgment(arguments, this.method);
		}
		if (run != this.invocation) {
			((ProxyMethodInvocation) run).setArguments(arguments);
		}
		List<String> eventIds = new ArrayList<>(positions.size());
		List<@Nullable Long> fingerprints = new ArrayList<>(positions.size());
		List<?> records = this.method.records(this.delivered);
		for (int position : positions) {
			eventIds.add(this.ids.ids().get(position));
			fingerprints.add(this.method.payloadFingerprint(records.get(position)));
		}
		return ListenerInfrastructure.execute(this.transaction, (status) -> {
			IdempotencyMetrics metrics = this.infrastructure.metrics();
			ProcessedEventStore.BatchMark marks = metrics.time(IdempotencyMetrics.Operation.CLAIM,
					IdempotencyMetrics.KAFKA,
					() -> this.infrastructure.store().markAll(this.consumerGroup, eventIds, fingerprints));
			Set<String> fresh = new HashSet<>(marks.marked());
			int[] kept = new int[fresh.size()];
			int count = 0;
			List<String> skipped = new ArrayList<>();
			for (int i = 0; i < eventIds.size(); i++) {
				// remove() lets only the first of several records with the same id
				// through
				if (fresh.remove(eventIds.get(i))) {
					kept[count++] = positions.get(i);
				}
				else {
					skipped.add(eventIds.get(i));
				}
			}
			kept = Arrays.copyOf(kept, count);
			report(metrics, eventIds, fingerprints, marks.otherPayloads(), skipped, count);
			boolean all = count == size();
			Acknowledgment acknowledgment = wrapAcknowledgment(arguments, status, all ? null : kept);
			if (count == 0) {
				if (acknowledgment != null) {
					acknowledgment.acknowledge();
				}
				return null;
			}
			if (!all) {
				BatchArguments.keep(arguments, this.method, kept, count, size());
			}
			try {
				Object result = run.proceed();
				this.method.checkResult(result);
				return result;
			}
			catch (BatchListenerFailedException ex) {
				throw new PartialBatchFailure(ex, BatchArguments.failedIndex(ex, this.method.records(arguments)), kept,
						status.isNewTransaction());
			}
		});
	}

	/**
	 * The listener reported which record of the batch failed, but the records before it
	 * were rolled back with it, so the error handler must not commit their offsets as it
	 * would. Process them again on their own and report the failed record at its position
	 * in the delivered batch; when that is not possible, report the first new record, so
	 * that the error handler retries the whole new part of the batch.
	 */
	private BatchListenerFailedException afterPartialFailure(PartialBatchFailure failure) {
		Throwable cause = cause(failure.reported);
		int failed = failure.failedIndex;
		int[] kept = failure.kept;
		if (failed > 0 && failed < kept.length && failure.newTransaction && this.template != null) {
			try {
				markAndProceed(rerun(), copy(), Arrays.stream(kept, 0, failed).boxed().toList(), true);
			}
			catch (Throwable ex) {
				return new BatchListenerFailedException(
						"@IdempotentListener batch failed again while processing the records before the failed one", ex,
						kept[0]);
			}
			return new BatchListenerFailedException("@IdempotentListener batch failed at record " + kept[failed], cause,
					kept[failed]);
		}
		return new BatchListenerFailedException(
				"@IdempotentListener batch failed and was rolled back; retrying from its first new record", cause,
				kept[0]);
	}

	private void report(IdempotencyMetrics metrics, List<String> eventIds, List<@Nullable Long> fingerprints,
			Set<String> otherPayloads, List<String> skipped, int executed) {
		if (!skipped.isEmpty()) {
			metrics.duplicateEvents(IdempotencyMetrics.KAFKA, skipped.size());
			this.infrastructure.reportReusedIds(metrics, this.consumerGroup,
					reusedIds(eventIds, fingerprints, otherPayloads));
			if (logger.isDebugEnabled()) {
				logger.debug("Skipping " + skipped.size() + " of " + eventIds.size()
						+ " events already processed by consumer group " + this.consumerGroup + ": "
						+ String.join(", ", skipped.subList(0, Math.min(LOGGED_IDS, skipped.size())))
						+ ((skipped.size() > LOGGED_IDS) ? " and " + (skipped.size() - LOGGED_IDS) + " more" : ""));
			}
		}
		if (executed > 0) {
			metrics.outcome(IdempotencyMetrics.KAFKA, IdempotencyMetrics.Outcome.EXECUTED, executed);
		}
	}

	/**
	 * Return the ids of a batch that were marked before for another payload, or that
	 * repeat an earlier record of the batch with another payload.
	 */
	private static List<String> reusedIds(List<String> eventIds, List<@Nullable Long> fingerprints,
			Set<String> markedForOtherPayloads) {
		List<String> reused = new ArrayList<>(markedForOtherPayloads);
		Map<String, Long> first = new HashMap<>();
		for (int i = 0; i < eventIds.size(); i++) {
			Long fingerprint = fingerprints.get(i);
			if (fingerprint != null) {
				Long earlier = first.putIfAbsent(eventIds.get(i), fingerprint);
				if (earlier != null && !earlier.equals(fingerprint)) {
					reused.add(eventIds.get(i));
				}
			}
		}
		return reused;
	}

	private @Nullable Acknowledgment wrapAcknowledgment(@Nullable Object[] arguments, TransactionStatus status,
			int @Nullable [] kept) {
		int index = this.method.getAcknowledgmentIndex();
		if (index >= 0 && arguments[index] instanceof Acknowledgment acknowledgment) {
			DeferredAcknowledgment deferred = new DeferredAcknowledgment(acknowledgment, status, kept);
			arguments[index] = deferred;
			return deferred;
		}
		return null;
	}

	private ProxyMethodInvocation rerun() {
		ProxyMethodInvocation template = this.template;
		if (template == null) {
			throw new IllegalStateException("No invocation to run again");
		}
		return (ProxyMethodInvocation) template.invocableClone();
	}

	private @Nullable Object[] copy() {
		return this.delivered.clone();
	}

	private int size() {
		return this.ids.ids().size();
	}

	private static List<Integer> positions(int from, int to) {
		return IntStream.range(from, to).boxed().toList();
	}

	private static Exception cause(BatchListenerFailedException reported) {
		return (reported.getCause() instanceof Exception cause) ? cause : reported;
	}

	/**
	 * A batch listener's {@link BatchListenerFailedException}, carried out of the rolled
	 * back transaction with what is needed to recover the records before the failure.
	 */
	private static final class PartialBatchFailure extends RuntimeException {

		private final BatchListenerFailedException reported;

		private final int failedIndex;

		private final int[] kept;

		private final boolean newTransaction;

		PartialBatchFailure(BatchListenerFailedException reported, int failedIndex, int[] kept,
				boolean newTransaction) {
			super(reported);
			this.reported = reported;
			this.failedIndex = failedIndex;
			this.kept = kept;
			this.newTransaction = newTransaction;
		}

	}

}
