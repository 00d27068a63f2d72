package dev.idempotency.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What the requests of the HTTP benchmark cost the machine, read around each round: the
 * CPU time and the bytes allocated by the service's request threads (Tomcat's
 * {@code exec} threads), and the CPU time of the PostgreSQL backends of the service's
 * pool (from {@code /proc}, on Linux, when PostgreSQL runs on the same machine). On a
 * machine whose cores are all busy, throughput follows the CPU time of a request.
 */
final class ServerCosts {

	static final String APPLICATION_NAME = "idempotency-http-benchmark";

	/** What the names of Tomcat's request threads contain. */
	static final String REQUEST_THREADS = "-exec-";

	private static final com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory
		.getThreadMXBean();

	private static final long CLOCK_TICKS_PER_SECOND = 100;

	private final JdbcTemplate jdbc;

	private long[] requestThreads = new long[0];

	private List<Integer> backends = List.of();

	private long cpuNanos;

	private long allocated;

	private long backendTicks;

	ServerCosts(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	void start() {
		this.requestThreads = Arrays.stream(threads.dumpAllThreads(false, false))
			.filter((thread) -> thread.getThreadName().contains(REQUEST_THREADS))
			.mapToLong(java.lang.management.ThreadInfo::getThreadId)
			.toArray();
		this.backends = this.jdbc.queryForList("SELECT pid FROM pg_stat_activity WHERE application_name = ?",
				Integer.class, APPLICATION_NAME);
		this.cpuNanos = cpu();
		this.allocated = allocated();
		this.backendTicks = backendTicks();
	}

	/**
	 * The costs of the requests since {@link #start()}.
	 * @param requests the requests answered
	 */
	Costs stop(long requests) {
		double per = Math.max(1, requests);
		double serverMicros = (cpu() - this.cpuNanos) / 1e3 / per;
		double allocatedKiB = (allocated() - this.allocated) / 1024.0 / per;
		long ticks = backendTicks();
		double databaseMicros = (ticks < 0 || this.backendTicks < 0) ? Double.NaN
				: (ticks - this.backendTicks) * (1e6 / CLOCK_TICKS_PER_SECOND) / per;
		return new Costs(serverMicros, allocatedKiB, databaseMicros);
	}

	private long cpu() {
		return Arrays.stream(this.requestThreads).map((id) -> Math.max(0, threads.getThreadCpuTime(id))).sum();
	}

	private long allocated() {
		return Arrays.stream(threads.getThreadAllocatedBytes(this.requestThreads)).map((b) -> Math.max(0, b)).sum();
	}

	/**
	 * The user and system CPU time of the pool's backends, in clock ticks, or -1 when
	 * {@code /proc} cannot tell (another operating system, a remote database).
	 */
	private long backendTicks() {
		long total = 0;
		for (int pid : this.backends) {
			try {
				String stat = Files.readString(Path.of("/proc", Integer.toString(pid), "stat"));
				String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
				// utime and stime, fields 14 and 15 of the line, 12 and 13 after the name
				total += Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
			}
			catch (IOException | RuntimeException ex) {
				return -1;
			}
		}
		return this.backends.isEmpty() ? -1 : total;
	}

	/**
	 * The costs of one request, on average.
	 *
	 * @param serverMicros CPU time of the service's request thread, in microseconds
	 * @param allocatedKiB bytes allocated by it, in KiB
	 * @param databaseMicros CPU time of PostgreSQL's backend, in microseconds
	 */
	record Costs(double serverMicros, double allocatedKiB, double databaseMicros) {
	}

}
