package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

import org.jspecify.annotations.Nullable;

/**
 * The targets of the performance work, each with what this run measured and whether it is
 * met, so that the one command ends with the verdict instead of leaving it to whoever
 * reads the tables. A target whose scenario did not run is not printed. A missed HTTP
 * target is followed by where the time goes: what a request of each side of the ratio
 * costs, in round trips, commits, WAL and CPU, as the HTTP table has them.
 */
final class Targets {

	private final List<Row> rows = new ArrayList<>();

	void atLeast(String target, double measured, double bound, String format) {
		atLeast(target, measured, bound, format, null);
	}

	private void atLeast(String target, double measured, double bound, String format, @Nullable String note) {
		this.rows.add(new Row(target, String.format(Locale.ROOT, format, measured), measured >= bound, note));
	}

	void atMost(String target, double measured, double bound, String format) {
		this.rows.add(new Row(target, String.format(Locale.ROOT, format, measured), measured <= bound, null));
	}

	/**
	 * The HTTP targets: each claim mode against the protocol it replaces written by hand
	 * (two-phase against the seed's, single-transaction against the same in one
	 * transaction) and against the bare {@code @Transactional} endpoint.
	 */
	void http(Map<String, List<HttpBenchmark.Result>> results) {
		List<HttpBenchmark.Result> bare = results.get(HttpBenchmark.BARE_TRANSACTIONAL);
		if (bare == null) {
			return;
		}
		double rate = median(bare, HttpBenchmark.Result::perSecond);
		httpMode(results, HttpBenchmark.TWO_PHASE, HttpBenchmark.BY_HAND_TWO_PHASE, "the seed's two-phase protocol",
				rate, 0.65);
		httpMode(results, HttpBenchmark.SINGLE_TRANSACTION, HttpBenchmark.BY_HAND_ONE_TRANSACTION,
				"the same in one transaction", rate, 0.75);
		ratio(results, HttpBenchmark.REPLAY_TWO_PHASE, rate,
				"HTTP: replay (two-phase endpoint) ≥ 1.5× bare @Transactional", 1.5);
		ratio(results, HttpBenchmark.REPLAY_SINGLE_TRANSACTION, rate,
				"HTTP: replay (single-transaction endpoint) ≥ 1.5× bare @Transactional", 1.5);
	}

	private void httpMode(Map<String, List<HttpBenchmark.Result>> results, String mode, String byHand,
			String byHandName, double bareRate, double bareBound) {
		List<HttpBenchmark.Result> measured = results.get(mode);
		if (measured == null) {
			return;
		}
		List<HttpBenchmark.Result> hand = results.get(byHand);
		if (hand != null) {
			atLeast("HTTP: " + mode + " ≥ 1.1× " + byHandName + " by hand",
					median(measured, HttpBenchmark.Result::perSecond) / median(hand, HttpBenchmark.Result::perSecond),
					1.1, "%.2f×", whereTheTimeGoes(measured, hand, "by hand"));
			atMost("HTTP: " + mode + " p99 ≤ by hand's",
					median(measured, HttpBenchmark.Result::p99) - median(hand, HttpBenchmark.Result::p99), 0,
					"%+.1f ms");
		}
		ratio(results, mode, bareRate, "HTTP: " + mode + " ≥ " + bareBound + "× bare @Transactional", bareBound);
	}

	private void ratio(Map<String, List<HttpBenchmark.Result>> results, String endpoint, double bare, String target,
			double bound) {
		List<HttpBenchmark.Result> measured = results.get(endpoint);
		if (measured != null) {
			atLeast(target, median(measured, HttpBenchmark.Result::perSecond) / bare, bound, "%.2f×",
					whereTheTimeGoes(measured, results.get(HttpBenchmark.BARE_TRANSACTIONAL), "bare @Transactional"));
		}
	}

	/**
	 * What a request costs on each side of a ratio, or {@code null} when the run counted
	 * neither round trips nor WAL (the CPU times alone are in the HTTP table).
	 */
	private static @Nullable String whereTheTimeGoes(List<HttpBenchmark.Result> measured,
			List<HttpBenchmark.Result> against, String againstName) {
		if (Double.isNaN(HttpBenchmark.median(measured, HttpBenchmark.Result::roundTrips))
				&& Double.isNaN(HttpBenchmark.median(measured, HttpBenchmark.Result::walBytes))) {
			return null;
		}
		return String.format(Locale.ROOT, "where the time goes, per request, this vs %s: %s, %s, %s, %s, %s",
				againstName, compared(measured, against, HttpBenchmark.Result::roundTrips, "%.2f", "round trips"),
				compared(measured, against, HttpBenchmark.Result::commits, "%.2f", "commits"),
				compared(measured, against, HttpBenchmark.Result::walBytes, "%.0f", "B of WAL"),
				compared(measured, against, (result) -> result.costs().serverMicros(), "%.0f", "µs service CPU"),
				compared(measured, against, (result) -> result.costs().databaseMicros(), "%.0f", "µs PostgreSQL CPU"));
	}

	private static String compared(List<HttpBenchmark.Result> measured, List<HttpBenchmark.Result> against,
			ToDoubleFunction<HttpBenchmark.Result> figure, String format, String unit) {
		return HttpBenchmark.figure(HttpBenchmark.median(measured, figure), format) + " vs "
				+ HttpBenchmark.figure(HttpBenchmark.median(against, figure), format) + " " + unit;
	}

	void drain(Map<String, List<Double>> results) {
		for (String shape : List.of("200 keys", "one key per row")) {
			List<Double> one = results.get("OutboxRelay two-phase, " + shape);
			List<Double> two = results.get(OutboxDrain.SECOND_JVM + shape);
			if (one != null) {
				atLeast("outbox: one relay drains ≥ 20 000 rows/s, " + shape, Benchmarks.median(one), 20_000,
						"%,.0f rows/s");
			}
			if (one != null && two != null) {
				// On two cores shared with PostgreSQL and the broker, a second relay (in
				// its own JVM, as another instance of the service) has no idle core to
				// add, but it must not take away either.
				atLeast("outbox: a second relay in its own JVM never lowers throughput, " + shape,
						100 * (Benchmarks.median(two) / Benchmarks.median(one) - 1), 0, "%+.0f %%");
			}
		}
	}

	void peers(OutboxPeers.Results results) {
		results.endToEnd.forEach((scenario, systems) -> {
			Iterator<Map.Entry<String, List<Double>>> each = systems.entrySet().iterator();
			double ours = Benchmarks.median(each.next().getValue());
			while (each.hasNext()) {
				Map.Entry<String, List<Double>> peer = each.next();
				atLeast("outbox end to end ≥ 20× " + peer.getKey() + ", " + scenario,
						ours / Benchmarks.median(peer.getValue()), 20, "%.1f×");
			}
		});
		results.latencies.entrySet()
			.stream()
			.findFirst()
			.ifPresent((ours) -> atMost("outbox: commit→publish p99 ≤ 100 ms at 1 000 events/s",
					median(ours.getValue(), (latency) -> latency.percentileMillis(99)), 100, "%.0f ms"));
	}

	void listeners(Map<Integer, Map<String, List<Double>>> results) {
		results.forEach((consumers, listeners) -> {
			String suffix = (consumers == 1) ? ", 1 consumer" : ", " + consumers + " consumers";
			listenerRatio(listeners, BenchmarkListeners.IDEMPOTENT_RECORD, BenchmarkListeners.HAND_WRITTEN,
					"listener: record ≥ 0.95× hand-written" + suffix, 0.95);
			listenerRatio(listeners, BenchmarkListeners.IDEMPOTENT_RECORD, IntegrationPeer.NAME,
					"listener: record ≥ 1.4× Spring Integration" + suffix, 1.4);
			// The plain batch listener, which does not deduplicate, is the limit: it is
			// in the listener table, not a target.
			listenerRatio(listeners, BenchmarkListeners.IDEMPOTENT_BATCH, BenchmarkListeners.HAND_WRITTEN_BATCH,
					"listener: batch ≥ 0.95× hand-written batch deduplication" + suffix, 0.95);
		});
	}

	private void listenerRatio(Map<String, List<Double>> listeners, String measured, String against, String target,
			double bound) {
		if (listeners.containsKey(measured) && listeners.containsKey(against)) {
			atLeast(target, Benchmarks.median(listeners.get(measured)) / Benchmarks.median(listeners.get(against)),
					bound, "%.2f×");
		}
	}

	void cleanup(Map<String, double[]> results, String defaults) {
		double[] measured = results.get(defaults);
		if (measured != null) {
			atLeast("cleanup ≥ 50 000 rows/s while inserts run (" + defaults + ")", measured[0], 50_000,
					"%,.0f rows/s");
			atMost("cleanup: no transaction over 1 s (" + defaults + ")", measured[1], 1_000, "%.0f ms");
		}
	}

	void print(PrintStream out) {
		out.printf("%n%-100s %18s %8s%n", "target", "this run", "");
		this.rows.forEach((row) -> {
			out.printf("%-100s %18s %8s%n", row.target(), row.measured(), row.met() ? "met" : "MISSED");
			if (!row.met() && row.note() != null) {
				out.printf("    %s%n", row.note());
			}
		});
	}

	private static <T> double median(List<T> values, ToDoubleFunction<T> value) {
		return Benchmarks.median(values.stream().map(value::applyAsDouble).toList());
	}

	private record Row(String target, String measured, boolean met, @Nullable String note) {
	}

}
