package dev.idempotency.web;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import org.springframework.context.annotation.AnnotatedBeanDefinitionReader;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.mock.web.MockServletContext;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.support.GenericWebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

/**
 * Whether the commit of a two-phase claim may skip writing its log, answered by crashing
 * the database: a handler claims its key, has its outside effect (a charge at a payment
 * provider) and is still running when the database crashes; after the restart a retry of
 * the same request arrives. Each database's subclass keeps what a commit does not write
 * itself in memory until the crash, as it is for a moment (or until the operating system
 * writes it, after a power loss) on a server that runs.
 * <p>
 * The claim as the library commits it, waiting for its log, survives the crash: the retry
 * gets 409 and the charge happens once. The same claim committed without waiting is gone
 * after the crash: the retry runs the handler again and the customer is charged twice. A
 * later durable commit would have flushed the claim too, but nothing durable is committed
 * between the claim and the outside effect.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class TwoPhaseClaimCrashTests {

	private static final String BODY = "{\"order\":\"o-1\",\"amount\":1200}";

	/**
	 * A data source on the database as it runs now, a new connection each time: the
	 * server restarts under the application.
	 * @param durable whether commits wait for their log, as the library's do, or return
	 * before it is written
	 */
	abstract DataSource dataSource(boolean durable) throws Exception;

	/** Keep whatever a commit does not write itself in memory until the crash. */
	abstract void holdTheLogInMemory() throws Exception;

	/** Crash the database and start it again. */
	abstract void crashAndRestart() throws Exception;

	@Test
	void aTwoPhaseClaimSurvivesACrashOfTheDatabaseWhileItsHandlerRunsAndARetryIsRefused() throws Exception {
		Outcome outcome = crashWhileTheHandlerRuns("durable", true);
		assertThat(outcome.claimsAfterRestart()).isEqualTo(1);
		assertThat(outcome.retryStatus()).isEqualTo(409);
		assertThat(outcome.charges()).isEqualTo(1);
	}

	@Test
	void aClaimCommittedWithoutWaitingForItsLogIsLostInTheCrashAndTheRetryChargesAgain() throws Exception {
		Outcome outcome = crashWhileTheHandlerRuns("asynchronous", false);
		assertThat(outcome.claimsAfterRestart()).isZero();
		assertThat(outcome.retryStatus()).isEqualTo(201);
		assertThat(outcome.charges()).isEqualTo(2);
	}

	/**
	 * Claim and charge, crash the database while the handler still runs, start it again,
	 * and send the retry while the first request is still running.
	 */
	private Outcome crashWhileTheHandlerRuns(String key, boolean durable) throws Exception {
		DataSource dataSource = dataSource(durable);
		GenericWebApplicationContext context = new GenericWebApplicationContext(new MockServletContext());
		context.registerBean(DataSource.class, () -> dataSource);
		new AnnotatedBeanDefinitionReader(context).register(Application.class);
		context.refresh();
		try {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context)
				.addFilters(context.getBean(IdempotencyFilter.class))
				.build();
			Provider provider = context.getBean(Provider.class);
			holdTheLogInMemory();
			CompletableFuture<MvcResult> first = CompletableFuture.supplyAsync(() -> send(mvc, key));
			assertThat(provider.charged.await(2, TimeUnit.MINUTES)).as("the first request charged").isTrue();
			crashAndRestart();
			long claims = new JdbcTemplate(dataSource(true))
				.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?", Long.class, key);
			int retryStatus = send(mvc, key).getResponse().getStatus();
			int charges = provider.charges.get();
			provider.release.countDown();
			// Its connection died with the server: it fails, whichever way.
			first.handle((result, failure) -> result).get(2, TimeUnit.MINUTES);
			return new Outcome(claims, retryStatus, charges);
		}
		finally {
			context.close();
		}
	}

	private static MvcResult send(MockMvc mvc, String key) {
		try {
			return mvc
				.perform(post("/charges").contentType("application/json").content(BODY).header("Idempotency-Key", key))
				.andReturn();
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	record Outcome(long claimsAfterRestart, int retryStatus, int charges) {
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class Application {

		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		IdempotencyFilter idempotencyFilter(DataSource dataSource, DataSourceTransactionManager transactionManager) {
			IdempotencyFilter filter = new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)),
					transactionManager, dataSource);
			filter.setDefaultMode(ClaimMode.TWO_PHASE);
			return filter;
		}

		@Bean
		Provider provider() {
			return new Provider();
		}

	}

	/**
	 * A payment provider's charge: an effect outside the database, which no rollback
	 * undoes. The first charge blocks until the test lets it go.
	 */
	@RestController
	static class Provider {

		final AtomicInteger charges = new AtomicInteger();

		final CountDownLatch charged = new CountDownLatch(1);

		final CountDownLatch release = new CountDownLatch(1);

		@PostMapping("/charges")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		org.springframework.http.ResponseEntity<Map<String, Object>> charge(@RequestBody Map<String, Object> order)
				throws InterruptedException {
			int charge = this.charges.incrementAndGet();
			this.charged.countDown();
			if (charge == 1) {
				this.release.await(5, TimeUnit.MINUTES);
			}
			return org.springframework.http.ResponseEntity.status(201).body(Map.of("charge", charge));
		}

	}

}
