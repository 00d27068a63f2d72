package dev.idempotency.core.metrics;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.IdempotencyMetrics.Operation;
import dev.idempotency.core.IdempotencyMetrics.Outcome;
import dev.idempotency.core.IdempotencyMetrics.Timing;
import io.micrometer.common.KeyValues;
import io.micrometer.common.docs.KeyName;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

class MicrometerIdempotencyMetricsTests {

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private final IdempotencyMetrics metrics = new MicrometerIdempotencyMetrics(this.registry);

	@Test
	void eachNamedOutcomeIncrementsItsTaggedCounter() {
		this.metrics.executed(IdempotencyMetrics.WEB);
		this.metrics.executed(IdempotencyMetrics.WEB);
		this.metrics.replayed(IdempotencyMetrics.WEB);
		this.metrics.inProgressConflict(IdempotencyMetrics.WEB);
		this.metrics.fingerprintMismatch(IdempotencyMetrics.WEB);
		this.metrics.duplicateEvents(IdempotencyMetrics.KAFKA, 3);
		this.metrics.published(IdempotencyMetrics.OUTBOX, 100);
		this.metrics.publishFailed(IdempotencyMetrics.OUTBOX, 2);
		this.metrics.dead(IdempotencyMetrics.OUTBOX, 1);
		assertThat(outcome("web", "executed")).isEqualTo(2);
		assertThat(outcome("web", "replayed")).isEqualTo(1);
		assertThat(outcome("web", "in_progress_conflict")).isEqualTo(1);
		assertThat(outcome("web", "fingerprint_mismatch")).isEqualTo(1);
		assertThat(outcome("kafka", "duplicate_event")).isEqualTo(3);
		assertThat(outcome("outbox", "published")).isEqualTo(100);
		assertThat(outcome("outbox", "publish_failed")).isEqualTo(2);
		assertThat(outcome("outbox", "dead")).isEqualTo(1);
		assertThat(this.registry.find(MicrometerIdempotencyMetrics.OUTCOMES).counters()).hasSize(8);
	}

	@Test
	void everyOutcomeHasADistinctTagValue() {
		for (Outcome outcome : Outcome.values()) {
			this.metrics.outcome("f", outcome, 1);
			assertThat(outcome("f", outcome.tagValue())).isOne();
		}
	}

	@Test
	void cleanupDeletionsAreCountedPerTable() {
		this.metrics.deletedByCleanup("idempotency-keys", 1_000);
		this.metrics.deletedByCleanup("idempotency-keys", 500);
		this.metrics.deletedByCleanup("processed-events", 0);
		assertThat(this.registry.get(MicrometerIdempotencyMetrics.CLEANUP_DELETED)
			.tag("table", "idempotency-keys")
			.counter()
			.count()).isEqualTo(1_500);
		assertThat(this.registry.find(MicrometerIdempotencyMetrics.CLEANUP_DELETED)
			.tag("table", "processed-events")
			.counter()).isNull();
	}

	@Test
	void operationsAreTimedWithFeatureAndErrorTags() {
		String result = this.metrics.time(Operation.CLAIM, IdempotencyMetrics.WEB, () -> "claimed");
		assertThat(result).isEqualTo("claimed");
		assertThatIllegalStateException()
			.isThrownBy(() -> this.metrics.time(Operation.REPLAY, IdempotencyMetrics.WEB, () -> {
				throw new IllegalStateException("broken");
			}));
		Timing publish = this.metrics.start(Operation.PUBLISH, IdempotencyMetrics.OUTBOX);
		publish.stop();
		assertThat(timer("idempotency.claim", "web", "none").count()).isOne();
		assertThat(timer("idempotency.replay", "web", "IllegalStateException").count()).isOne();
		assertThat(timer("idempotency.publish", "outbox", "none").count()).isOne();
	}

	@Test
	void withAnObservationRegistryOperationsAreObservationsThatRecordTheSameTimers() {
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(this.registry));
		List<String> observed = new ArrayList<>();
		observations.observationConfig().observationHandler(new ObservationHandler<>() {

			@Override
			public void onStart(Observation.Context context) {
				observed.add(context.getName() + " " + context.getLowCardinalityKeyValue("feature").getValue());
			}

			@Override
			public boolean supportsContext(Observation.Context context) {
				return true;
			}

		});
		IdempotencyMetrics observing = new MicrometerIdempotencyMetrics(this.registry, observations);
		observing.time(Operation.CLAIM, IdempotencyMetrics.KAFKA, () -> 1);
		observing.start(Operation.PUBLISH, IdempotencyMetrics.OUTBOX).stop(new IllegalStateException());
		assertThat(observed).containsExactly("idempotency.claim kafka", "idempotency.publish outbox");
		assertThat(timer("idempotency.claim", "kafka", "none").count()).isOne();
		assertThat(timer("idempotency.publish", "outbox", "IllegalStateException").count()).isOne();
	}

	@Test
	void anObservationConventionRenamesTheObservationsAndChangesTheirKeyValues() {
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(this.registry));
		MicrometerIdempotencyMetrics observing = new MicrometerIdempotencyMetrics(this.registry, observations);
		observing.setObservationConvention(new DefaultIdempotencyObservationConvention() {

			@Override
			public String getName() {
				return "payments." + IdempotencyObservationDocumentation.CLAIM.getName();
			}

			@Override
			public KeyValues getLowCardinalityKeyValues(IdempotencyObservationContext context) {
				return super.getLowCardinalityKeyValues(context).and("operation",
						context.getOperation().name().toLowerCase(Locale.ROOT));
			}

		});
		observing.time(Operation.CLAIM, IdempotencyMetrics.WEB, () -> 1);
		assertThat(this.registry.get("payments.idempotency.claim")
			.tag("feature", "web")
			.tag("operation", "claim")
			.tag("error", "none")
			.timer()
			.count()).isOne();
		assertThat(this.registry.find("idempotency.claim").timer()).isNull();
	}

	@Test
	void theDocumentationNamesEachOperationAndItsDefaultConvention() {
		assertThat(IdempotencyObservationDocumentation.values())
			.extracting(IdempotencyObservationDocumentation::getName)
			.containsExactly(Operation.CLAIM.meterName(), Operation.REPLAY.meterName(), Operation.PUBLISH.meterName());
		assertThat(IdempotencyObservationDocumentation.CLAIM.getDefaultConvention())
			.isEqualTo(DefaultIdempotencyObservationConvention.class);
		assertThat(IdempotencyObservationDocumentation.CLAIM.getLowCardinalityKeyNames()).extracting(KeyName::asString)
			.containsExactly("feature");
	}

	@Test
	void noopRecordsNothingAndNeverFails() {
		IdempotencyMetrics noop = IdempotencyMetrics.noop();
		noop.executed("web");
		noop.deletedByCleanup("t", 5);
		assertThat(noop.time(Operation.CLAIM, "web", () -> "x")).isEqualTo("x");
		noop.start(Operation.PUBLISH, "outbox").stop(new RuntimeException());
		assertThat(this.registry.getMeters()).isEmpty();
	}

	private double outcome(String feature, String outcome) {
		return this.registry.get(MicrometerIdempotencyMetrics.OUTCOMES)
			.tag("feature", feature)
			.tag("outcome", outcome)
			.counter()
			.count();
	}

	private Timer timer(String name, String feature, String error) {
		return this.registry.get(name).tag("feature", feature).tag("error", error).timer();
	}

}
