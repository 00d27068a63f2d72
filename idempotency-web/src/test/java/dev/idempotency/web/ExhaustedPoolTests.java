package dev.idempotency.web;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.context.annotation.AnnotatedBeanDefinitionReader;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.mock.web.MockServletContext;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.support.GenericWebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

/**
 * A two-phase claim has committed, and then the pool has no connection left for the
 * business transaction, nor for giving the claim back: the request never ran, and its key
 * must not stay claimed for the rest of its lease. The release is retried in the
 * background until a connection is free.
 */
@PostgresTest
class ExhaustedPoolTests {

	private static final int POOL_SIZE = 3;

	private HikariDataSource pool;

	private GenericWebApplicationContext context;

	private MockMvc mvc;

	private final List<Connection> held = new ArrayList<>();

	private void start(TestSchema schema, int maxPendingReleases) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(schema.getJdbcUrl());
		config.setUsername(schema.getUsername());
		config.setPassword(schema.getPassword());
		config.setMaximumPoolSize(POOL_SIZE);
		config.setConnectionTimeout(250);
		this.pool = new HikariDataSource(config);
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT,
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(this.pool);
		this.context = new GenericWebApplicationContext(new MockServletContext());
		this.context.registerBean(DataSource.class, () -> this.pool);
		this.context.registerBean("maxPendingReleases", Integer.class, () -> maxPendingReleases);
		new AnnotatedBeanDefinitionReader(this.context).register(Application.class);
		this.context.refresh();
		this.mvc = MockMvcBuilders.webAppContextSetup(this.context)
			.addFilters(this.context.getBean(IdempotencyFilter.class))
			.build();
	}

	@AfterEach
	void stop() throws SQLException {
		returnHeldConnections();
		if (this.context != null) {
			this.context.close();
			this.pool.close();
		}
	}

	@Test
	void aClaimWhoseBusinessTransactionFoundNoConnectionIsReleasedOnceOneIsFree(TestSchema schema) throws Exception {
		start(schema, IdempotencyFilter.DEFAULT_MAX_PENDING_RELEASES);
		this.context.getBean(HookedTransactionManager.class).beforeNextBusinessTransaction(this::holdEveryConnection);
		int failed = send("k-exhausted");
		assertThat(failed).isGreaterThanOrEqualTo(500);
		assertThat(this.context.getBean(Charges.class).executions).hasValue(0);
		returnHeldConnections();
		await().atMost(Duration.ofSeconds(30)).until(() -> claims("k-exhausted") == 0);
		assertThat(send("k-exhausted")).isEqualTo(201);
		assertThat(this.context.getBean(Charges.class).executions).hasValue(1);
	}

	@Test
	void pastTheLargestNumberOfWaitingReleasesAClaimStaysUntilItsLeaseEnds(TestSchema schema) throws Exception {
		start(schema, 0);
		this.context.getBean(HookedTransactionManager.class).beforeNextBusinessTransaction(this::holdEveryConnection);
		assertThat(send("k-over")).isGreaterThanOrEqualTo(500);
		returnHeldConnections();
		assertThat(claims("k-over")).isOne();
		assertThat(send("k-over")).isEqualTo(409);
		assertThat(this.context.getBean(Charges.class).executions).hasValue(0);
	}

	private int send(String key) throws Exception {
		try {
			return this.mvc.perform(post("/charges").header("Idempotency-Key", key))
				.andReturn()
				.getResponse()
				.getStatus();
		}
		catch (Exception ex) {
			// An exception that nothing resolved: the container answers 500.
			return 500;
		}
	}

	/**
	 * Take every connection of the pool, however long the pool takes to open them on a
	 * busy machine: a request after this finds none within its short timeout.
	 */
	private void holdEveryConnection() {
		await().atMost(Duration.ofSeconds(30)).until(() -> {
			try {
				this.held.add(this.pool.getConnection());
			}
			catch (SQLException ex) {
				// The pool is still opening a connection: ask again.
			}
			return this.held.size() == POOL_SIZE;
		});
	}

	private void returnHeldConnections() throws SQLException {
		for (Connection connection : this.held) {
			connection.close();
		}
		this.held.clear();
	}

	private long claims(String key) {
		Long count = new JdbcTemplate(this.pool)
			.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?", Long.class, key);
		return (count != null) ? count : 0;
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class Application {

		@Bean
		HookedTransactionManager transactionManager(DataSource dataSource) {
			return new HookedTransactionManager(dataSource);
		}

		@Bean
		IdempotencyFilter idempotencyFilter(DataSource dataSource, HookedTransactionManager transactionManager,
				Integer maxPendingReleases) {
			IdempotencyFilter filter = new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)),
					transactionManager, dataSource);
			filter.setDefaultLease(Duration.ofMinutes(10));
			filter.setMaxPendingReleases(maxPendingReleases);
			return filter;
		}

		@Bean
		Charges charges() {
			return new Charges();
		}

	}

	@RestController
	static class Charges {

		final AtomicInteger executions = new AtomicInteger();

		@PostMapping("/charges")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		org.springframework.http.ResponseEntity<String> charge() {
			this.executions.incrementAndGet();
			return org.springframework.http.ResponseEntity.status(201).body("charged");
		}

	}

}
