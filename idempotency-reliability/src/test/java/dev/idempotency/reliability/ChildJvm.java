package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * A Java process of the suite: started with a command line of its own, its output
 * appended to a log file, killed with SIGKILL ({@link #kill()}) or stopped with SIGTERM
 * ({@link #terminate(Duration)}).
 */
class ChildJvm {

	private static final Log logger = LogFactory.getLog(ChildJvm.class);

	private final String name;

	private final Path workDir;

	private final List<String> arguments;

	private @Nullable Process process;

	private int starts;

	ChildJvm(String name, Path workDir, List<String> arguments) {
		this.name = name;
		this.workDir = workDir;
		this.arguments = List.copyOf(arguments);
	}

	static String javaExecutable() {
		return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
	}

	synchronized void start() {
		if (isAlive()) {
			throw new IllegalStateException(this.name + " is running");
		}
		List<String> command = new ArrayList<>();
		command.add(javaExecutable());
		command.addAll(this.arguments);
		Path log = log();
		try {
			Files.createDirectories(log.getParent());
			Files.writeString(log, "\n==== start " + (++this.starts) + " ====\n",
					java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
			Process started = new ProcessBuilder(command).directory(this.workDir.toFile())
				.redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
				.start();
			Processes.register(this.workDir, started.toHandle());
			this.process = started;
			logger.info("Started " + this.name + " (pid " + started.pid() + ")");
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start " + this.name, ex);
		}
	}

	synchronized boolean isAlive() {
		return this.process != null && this.process.isAlive();
	}

	/** SIGKILL: nothing runs after it, no shutdown hook, no graceful anything. */
	synchronized void kill() {
		Process current = this.process;
		if (current == null) {
			return;
		}
		current.destroyForcibly();
		waitFor(current, Duration.ofSeconds(30));
		Processes.unregister(current.toHandle());
		logger.info("Killed " + this.name + " (SIGKILL)");
	}

	/**
	 * SIGTERM, then SIGKILL if it has not exited within the timeout.
	 * @return how long it took to exit
	 */
	synchronized Duration terminate(Duration timeout) {
		Process current = this.process;
		if (current == null) {
			return Duration.ZERO;
		}
		long start = System.nanoTime();
		current.destroy();
		if (!waitFor(current, timeout)) {
			current.destroyForcibly();
			waitFor(current, Duration.ofSeconds(30));
		}
		Processes.unregister(current.toHandle());
		Duration took = Duration.ofNanos(System.nanoTime() - start);
		logger.info("Stopped " + this.name + " (SIGTERM) in " + took.toMillis() + " ms");
		return took;
	}

	/**
	 * Send a signal such as {@code STOP} or {@code CONT}: a frozen process keeps its
	 * sockets open and answers nothing, as one stalled by the machine would.
	 */
	synchronized void signal(String signal) {
		Process current = this.process;
		if (current == null || !current.isAlive()) {
			return;
		}
		try {
			Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(current.pid())).inheritIO().start();
			if (!waitFor(kill, Duration.ofSeconds(10)) || kill.exitValue() != 0) {
				throw new IllegalStateException("Could not send SIG" + signal + " to " + this.name);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		logger.info("Sent SIG" + signal + " to " + this.name);
	}

	private static boolean waitFor(Process process, Duration timeout) {
		try {
			return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	/** The file its output is appended to. */
	Path log() {
		return this.workDir.resolve("logs").resolve(this.name + ".log");
	}

	synchronized long pid() {
		return (this.process != null) ? this.process.pid() : -1;
	}

	String name() {
		return this.name;
	}

	@Override
	public String toString() {
		return this.name;
	}

}
