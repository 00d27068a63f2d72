package dev.idempotency.benchmarks;

/**
 * The processed-event table in daily partitions against the one table, alone: the part of
 * {@link ScaleBenchmark} that {@link Benchmarks} runs after its cleanup runs, sized by
 * {@code benchmark.cleanup-rows} and {@code benchmark.scale-samples}.
 */
public final class PartitionBenchmark {

	private PartitionBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		ScaleBenchmark.runPartitions(Long.getLong("benchmark.cleanup-rows", 1_000_000),
				Integer.getInteger("benchmark.scale-samples", 1_000), System.out);
		System.exit(0);
	}

}
