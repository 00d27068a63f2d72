package dev.idempotency.benchmarks;

import org.springframework.boot.autoconfigure.AutoConfigurationImportFilter;
import org.springframework.boot.autoconfigure.AutoConfigurationMetadata;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.env.Environment;

/**
 * Keeps the outbox peers' auto-configurations out of every Spring Boot application of
 * this module that does not ask for them: the benchmarks start several applications in
 * one JVM, and an application that found Spring Modulith's or namastack's outbox on the
 * class path would otherwise run it (namastack polls and creates tables by default).
 * <p>
 * An application whose {@code benchmark.peer} property names a peer ({@code modulith} or
 * {@code namastack}) gets that peer's auto-configurations and neither the other's nor
 * this project's; any other application gets neither peer.
 */
final class PeerAutoConfigurationFilter implements AutoConfigurationImportFilter, EnvironmentAware {

	static final String PEER_PROPERTY = "benchmark.peer";

	private String peer = "";

	@Override
	public void setEnvironment(Environment environment) {
		this.peer = environment.getProperty(PEER_PROPERTY, "");
	}

	@Override
	public boolean[] match(String[] autoConfigurationClasses, AutoConfigurationMetadata autoConfigurationMetadata) {
		boolean[] matches = new boolean[autoConfigurationClasses.length];
		for (int i = 0; i < matches.length; i++) {
			String candidate = autoConfigurationClasses[i];
			String owner = (candidate == null) ? "" : ownerOf(candidate);
			matches[i] = this.peer.isEmpty() ? !isPeer(owner) : (owner.isEmpty() || owner.equals(this.peer));
		}
		return matches;
	}

	private static boolean isPeer(String owner) {
		return owner.equals("modulith") || owner.equals("namastack");
	}

	private static String ownerOf(String autoConfiguration) {
		if (autoConfiguration.startsWith("org.springframework.modulith.")) {
			return "modulith";
		}
		if (autoConfiguration.startsWith("io.namastack.")) {
			return "namastack";
		}
		if (autoConfiguration.startsWith("dev.idempotency.")) {
			return "idempotency";
		}
		return "";
	}

}
