package dev.idempotency.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * How busy the machine's cores were over a window, from the first line of
 * {@code /proc/stat} (Linux): every process counts, the database and the broker included.
 * Elsewhere the share is {@code NaN}.
 */
final class MachineCpu {

	private static final Path STAT = Path.of("/proc/stat");

	private MachineCpu() {
	}

	/**
	 * The machine's CPU ticks so far: busy, then idle (idle and waiting for I/O).
	 * @return the ticks, or an empty array where they cannot be read
	 */
	static long[] ticks() {
		try {
			String[] fields = Files.readAllLines(STAT).get(0).trim().split("\\s+");
			long[] values = Arrays.stream(fields, 1, Math.min(fields.length, 9)).mapToLong(Long::parseLong).toArray();
			long idle = values[3] + values[4];
			return new long[] { Arrays.stream(values).sum() - idle, idle };
		}
		catch (IOException | RuntimeException ex) {
			return new long[0];
		}
	}

	/**
	 * The share of the CPU time since {@code start} that was busy.
	 * @param start what {@link #ticks()} returned at the start of the window
	 * @return between 0 and 1, or {@code NaN}
	 */
	static double busySince(long[] start) {
		long[] end = ticks();
		if (start.length == 0 || end.length == 0) {
			return Double.NaN;
		}
		double busy = end[0] - start[0];
		double idle = end[1] - start[1];
		return (busy + idle > 0) ? busy / (busy + idle) : Double.NaN;
	}

}
