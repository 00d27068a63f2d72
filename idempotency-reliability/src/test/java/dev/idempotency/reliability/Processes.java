package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Every process the suite starts, so that none outlives it: a shutdown hook kills them
 * all, and since a JVM killed with SIGKILL runs no hook, their pids are also written to a
 * file that the next run reads to kill what the last one left behind.
 */
final class Processes {

	private static final Log logger = LogFactory.getLog(Processes.class);

	private static final Set<ProcessHandle> running = ConcurrentHashMap.newKeySet();

	// Last registered, first run: a directory is removed after the server that uses it
	// stops.
	private static final Deque<Runnable> cleanups = new ConcurrentLinkedDeque<>();

	// A cluster per database, each with a work directory and pids of its own.
	private static final Set<Path> initialized = ConcurrentHashMap.newKeySet();

	private static volatile boolean hooked;

	private Processes() {
	}

	static synchronized void init(Path workDir) {
		if (!initialized.add(workDir)) {
			return;
		}
		Path pids = workDir.resolve("pids");
		try {
			Files.createDirectories(workDir);
			if (Files.exists(pids)) {
				for (String line : Files.readAllLines(pids)) {
					Optional<ProcessHandle> orphan = ProcessHandle.of(Long.parseLong(line.trim()));
					orphan.filter(ProcessHandle::isAlive).ifPresent((handle) -> {
						logger.warn("Killing process " + handle.pid() + " left over by an earlier run");
						handle.destroyForcibly();
					});
				}
			}
			Files.deleteIfExists(pids);
		}
		catch (IOException | NumberFormatException ex) {
			logger.warn("Could not read the pids of an earlier run: " + ex);
		}
		if (!hooked) {
			Runtime.getRuntime().addShutdownHook(new Thread(Processes::killAll, "reliability-kill-children"));
			hooked = true;
		}
	}

	static void register(Path workDir, ProcessHandle process) {
		running.add(process);
		try {
			Files.writeString(workDir.resolve("pids"), process.pid() + "\n", StandardOpenOption.CREATE,
					StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	static void unregister(ProcessHandle process) {
		running.remove(process);
	}

	/**
	 * Run on exit, after the processes are killed (stop PostgreSQL, which is no child),
	 * in the reverse order of registration.
	 */
	static void onExit(Runnable cleanup) {
		cleanups.addFirst(cleanup);
	}

	static void killAll() {
		for (ProcessHandle process : List.copyOf(running)) {
			process.descendants().forEach(ProcessHandle::destroyForcibly);
			process.destroyForcibly();
		}
		for (Runnable cleanup : List.copyOf(cleanups)) {
			try {
				cleanup.run();
			}
			catch (RuntimeException ex) {
				// Exiting anyway: clean up the rest.
			}
		}
	}

}
