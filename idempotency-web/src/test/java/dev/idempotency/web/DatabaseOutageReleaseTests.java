package dev.idempotency.web;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

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
 * The database stops between the commit of a two-phase claim and the business
 * transaction: the request fails, and giving its claim back cannot reach the database
 * either. The release is retried in the background, so that once the database answers
 * again the key is free within moments, not at the end of its lease. Each database's
 * subclass runs a server of its own, which it crashes and starts again.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class DatabaseOutageReleaseTests {

	private static final Log log = LogFactory.getLog(DatabaseOutageReleaseTests.class);

	private HikariDataSource pool;

	/** Start the server for the first time and return its pool's settings. */
	abstract HikariConfig startServer() throws Exception;

	/** The schema script of the server's database. */
	abstract String coreScript();

	/** Crash the server: its connections die with it. */
	abstract void crash();

	/** Start the crashed server again. */
	abstract void restart() throws Exception;

	/** Remove the server and its files. */
	abstract void removeServer() throws Exception;

	@BeforeAll
	void createServer() throws Exception {
		HikariConfig config = startServer();
		config.setMaximumPoolSize(4);
		config.setConnectionTimeout(500);
		this.pool = new HikariDataSource(config);
		SchemaScripts
			.populator(coreScript(),
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(this.pool);
	}

	@AfterAll
	void removePoolAndServer() throws Exception {
		if (this.pool != null) {
			this.pool.close();
		}
		removeServer();
	}

	@Test
	void aClaimWhoseReleaseCouldNotReachTheDatabaseIsReleasedOnceItAnswersAgain() throws Exception {
		GenericWebApplicationContext context = new GenericWebApplicationContext(new MockServletContext());
		context.registerBean(DataSource.class, () -> this.pool);
		new AnnotatedBeanDefinitionReader(context).register(Application.class);
		context.refresh();
		try {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context)
				.addFilters(context.getBean(IdempotencyFilter.class))
				.build();
			context.getBean(HookedTransactionManager.class).beforeNextBusinessTransaction(this::crash);
			assertThat(send(mvc, "k-outage")).isGreaterThanOrEqualTo(500);
			int executions = context.getBean(Charges.class).executions.get();
			restart();
			long restarted = System.nanoTime();
			await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> claims() == 0);
			log.info("Claim released " + Duration.ofNanos(System.nanoTime() - restarted).toMillis()
					+ " ms after the database answered again");
			assertThat(send(mvc, "k-outage")).isEqualTo(201);
			assertThat(context.getBean(Charges.class).executions).hasValue(executions + 1);
		}
		finally {
			context.close();
		}
	}

	private static int send(MockMvc mvc, String key) {
		try {
			return mvc.perform(post("/charges").header("Idempotency-Key", key)).andReturn().getResponse().getStatus();
		}
		catch (Exception ex) {
			// An exception that nothing resolved: the container answers 500.
			return 500;
		}
	}

	private long claims() {
		try {
			Long count = new JdbcTemplate(this.pool)
				.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'k-outage'", Long.class);
			return (count != null) ? count : -1;
		}
		catch (RuntimeException ex) {
			return -1;
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class Application {

		@Bean
		HookedTransactionManager transactionManager(DataSource dataSource) {
			return new HookedTransactionManager(dataSource);
		}

		@Bean
		IdempotencyFilter idempotencyFilter(DataSource dataSource, HookedTransactionManager transactionManager) {
			IdempotencyFilter filter = new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)),
					transactionManager, dataSource);
			filter.setDefaultLease(Duration.ofMinutes(10));
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
