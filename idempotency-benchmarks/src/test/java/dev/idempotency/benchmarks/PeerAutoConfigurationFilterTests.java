package dev.idempotency.benchmarks;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurationImportFilter;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox peers' auto-configurations reach only the application that asks for them.
 */
class PeerAutoConfigurationFilterTests {

	private static final String[] CANDIDATES = {
			"org.springframework.modulith.events.jdbc.JdbcEventPublicationAutoConfiguration",
			"io.namastack.outbox.config.OutboxCoreSchedulingAutoConfiguration",
			"dev.idempotency.autoconfigure.IdempotencyAutoConfiguration",
			"org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration" };

	@Test
	void springBootLoadsTheFilter() {
		assertThat(SpringFactoriesLoader.forDefaultResourceLocation(getClass().getClassLoader())
			.load(AutoConfigurationImportFilter.class)).hasAtLeastOneElementOfType(PeerAutoConfigurationFilter.class);
	}

	@Test
	void anApplicationThatAsksForNoPeerGetsNeither() {
		assertThat(filter("").match(CANDIDATES, null)).containsExactly(false, false, true, true);
	}

	@Test
	void aPeersApplicationGetsItsOwnAutoConfigurationsAndBootsOnly() {
		assertThat(filter("modulith").match(CANDIDATES, null)).containsExactly(true, false, false, true);
		assertThat(filter("namastack").match(CANDIDATES, null)).containsExactly(false, true, false, true);
	}

	private static PeerAutoConfigurationFilter filter(String peer) {
		PeerAutoConfigurationFilter filter = new PeerAutoConfigurationFilter();
		MockEnvironment environment = new MockEnvironment();
		if (!peer.isEmpty()) {
			environment.setProperty(PeerAutoConfigurationFilter.PEER_PROPERTY, peer);
		}
		filter.setEnvironment(environment);
		return filter;
	}

}
