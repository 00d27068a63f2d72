package dev.idempotency.web;

import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronization;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.List;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PostgresTest;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import org.springframework.context.annotation.AnnotatedBeanDefinitionReader;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.mock.web.MockServletContext;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.ResourceTransactionManager;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.support.GenericWebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

/**
 * A single-transaction claim on {@link JdbcIdempotencyKeyStore} sets the savepoint that
 * the handler's work is undone to in the claim's own round trip, not in one of the
 * transaction manager's: the undo still rolls the handler's work back and keeps the
 * claim, clears the rollback-only flag the handler's failure left, and after a take-over
 * goes back to a savepoint after the take-over. Under a transaction manager that is no
 * {@code DataSourceTransactionManager}, the savepoint is the transaction manager's.
 */
@PostgresTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SingleTransactionClaimSavepointTests {

	private final DataSource dataSource;

	private final AtomicInteger savepointsSet = new AtomicInteger();

	private GenericWebApplicationContext context;

	private MockMvc mvc;

	private JdbcTemplate jdbc;

	SingleTransactionClaimSavepointTests(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT,
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(dataSource);
		this.dataSource = countingSavepoints(dataSource, this.savepointsSet);
		this.jdbc = new JdbcTemplate(dataSource);
		this.jdbc.execute("CREATE TABLE IF NOT EXISTS savepoint_test_charge (item text NOT NULL)");
	}

	@BeforeAll
	void startApplication() {
		this.context = new GenericWebApplicationContext(new MockServletContext());
		this.context.registerBean(DataSource.class, () -> this.dataSource);
		new AnnotatedBeanDefinitionReader(this.context).register(Application.class);
		this.context.refresh();
		this.mvc = MockMvcBuilders.webAppContextSetup(this.context)
			.addFilters(this.context.getBean(IdempotencyFilter.class))
			.build();
	}

	@BeforeEach
	void resetCounts() {
		this.savepointsSet.set(0);
		this.context.getBean(Charges.class).executions().set(0);
	}

	@AfterAll
	void stopApplication() {
		this.context.close();
	}

	@Test
	void aCompletedRequestSetsNoSavepointOfTheTransactionManager() throws Exception {
		String item = unique();
		MvcResult result = send(item, "ok", "k-" + item);
		assertThat(result.getResponse().getStatus()).isEqualTo(200);
		assertThat(this.savepointsSet).hasValue(0);
		assertThat(charges(item)).isOne();
		assertThat(keyStatus("k-" + item)).isEqualTo("DONE");
	}

	@Test
	void aHandlerThatWritesThenFailsWithADecidedClientErrorLeavesOnlyTheStoredOutcome() throws Exception {
		String item = unique();
		String key = "k-" + item;
		MvcResult declined = send(item, "decline", key);
		assertThat(declined.getResponse().getStatus()).isEqualTo(402);
		assertThat(charges(item)).as("the handler's write is undone").isZero();
		assertThat(keyStatus(key)).isEqualTo("DONE");
		MvcResult again = send(item, "decline", key);
		assertThat(again.getResponse().getStatus()).isEqualTo(402);
		assertThat(again.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
		assertThat(this.context.getBean(Charges.class).executions()).hasValue(1);
	}

	@Test
	void theTransactionsSynchronizationsAreToldOfTheRollbackToTheClaimsSavepoint() throws Exception {
		// What the outbox relies on to drop the appends of the work undone, which it
		// holds until the commit.
		String item = unique();
		Charges charges = this.context.getBean(Charges.class);
		charges.synchronizationEvents().clear();
		MvcResult declined = send(item, "decline", "k-" + item);
		assertThat(declined.getResponse().getStatus()).isEqualTo(402);
		assertThat(charges.synchronizationEvents()).containsExactly("savepointRollback", "beforeCommit");
	}

	@Test
	void aTakenOverClaimIsUndoneToASavepointAfterTheTakeOver() throws Exception {
		String item = unique();
		String key = "k-" + item;
		send(item, "decline", key);
		// The same request's key as a claim whose request died with its lease run out.
		this.jdbc.update("UPDATE idempotency_key SET status = 'IN_PROGRESS', owner = 'dead',"
				+ " locked_until = now() - interval '1 second', completed_at = NULL, http_status = NULL,"
				+ " response_headers = NULL, response_body = NULL WHERE idempotency_key = ?", key);
		MvcResult declined = send(item, "decline", key);
		assertThat(declined.getResponse().getStatus()).isEqualTo(402);
		assertThat(declined.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isNull();
		assertThat(charges(item)).isZero();
		assertThat(keyStatus(key)).as("completed by the request that took the claim over").isEqualTo("DONE");
		assertThat(this.context.getBean(Charges.class).executions()).hasValue(2);
	}

	@Test
	void underATransactionManagerThatKeepsMoreThanTheConnectionTheSavepointIsTheTransactionManagers() throws Exception {
		GenericWebApplicationContext other = new GenericWebApplicationContext(new MockServletContext());
		other.registerBean(DataSource.class, () -> this.dataSource);
		new AnnotatedBeanDefinitionReader(other).register(OtherTransactionManagerApplication.class);
		other.refresh();
		try {
			MockMvc otherMvc = MockMvcBuilders.webAppContextSetup(other)
				.addFilters(other.getBean(IdempotencyFilter.class))
				.build();
			String item = unique();
			MvcResult result = send(otherMvc, item, "ok", "k-" + item);
			assertThat(result.getResponse().getStatus()).isEqualTo(200);
			assertThat(this.savepointsSet).hasValue(1);
			MvcResult declined = send(otherMvc, item + "-d", "decline", "k-" + item + "-d");
			assertThat(declined.getResponse().getStatus()).isEqualTo(402);
			assertThat(charges(item + "-d")).isZero();
			assertThat(keyStatus("k-" + item + "-d")).isEqualTo("DONE");
		}
		finally {
			other.close();
		}
	}

	private MvcResult send(String item, String outcome, String key) throws Exception {
		return send(this.mvc, item, outcome, key);
	}

	private static MvcResult send(MockMvc mvc, String item, String outcome, String key) throws Exception {
		return mvc
			.perform(post("/charges").contentType("application/json")
				.content("{\"item\":\"" + item + "\"}")
				.header("Idempotency-Key", key)
				.header("X-Outcome", outcome))
			.andReturn();
	}

	private int charges(String item) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM savepoint_test_charge WHERE item = ?",
				Integer.class, item);
		return (count != null) ? count : 0;
	}

	private String keyStatus(String key) {
		return this.jdbc.queryForObject("SELECT status FROM idempotency_key WHERE idempotency_key = ?", String.class,
				key);
	}

	private static String unique() {
		return UUID.randomUUID().toString();
	}

	private static DataSource countingSavepoints(DataSource dataSource, AtomicInteger savepoints) {
		return new DelegatingDataSource(dataSource) {

			@Override
			public Connection getConnection() throws SQLException {
				Connection connection = super.getConnection();
				return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
						new Class<?>[] { Connection.class }, (proxy, method, arguments) -> {
							if (method.getName().equals("setSavepoint")) {
								savepoints.incrementAndGet();
							}
							try {
								return method.invoke(connection, arguments);
							}
							catch (InvocationTargetException ex) {
								throw ex.getTargetException();
							}
						});
			}

		};
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	@EnableTransactionManagement
	static class Application {

		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		IdempotencyFilter idempotencyFilter(DataSource dataSource, DataSourceTransactionManager transactionManager) {
			IdempotencyFilter filter = new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)),
					transactionManager, dataSource);
			filter.setDefaultMode(ClaimMode.SINGLE_TRANSACTION);
			return filter;
		}

		@Bean
		Charges charges(DataSource dataSource) {
			return new Charges(new JdbcTemplate(dataSource));
		}

	}

	/**
	 * A transaction manager of the same {@code DataSource} that is no
	 * {@link DataSourceTransactionManager}, as JPA's is not: its transactions are the
	 * same JDBC ones here, but the library cannot know that it keeps nothing besides.
	 */
	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	@EnableTransactionManagement
	static class OtherTransactionManagerApplication {

		@Bean
		OtherTransactionManager transactionManager(DataSource dataSource) {
			return new OtherTransactionManager(new DataSourceTransactionManager(dataSource));
		}

		@Bean
		IdempotencyFilter idempotencyFilter(DataSource dataSource, OtherTransactionManager transactionManager) {
			IdempotencyFilter filter = new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)),
					transactionManager, dataSource);
			filter.setDefaultMode(ClaimMode.SINGLE_TRANSACTION);
			return filter;
		}

		@Bean
		Charges charges(DataSource dataSource) {
			return new Charges(new JdbcTemplate(dataSource));
		}

	}

	static final class OtherTransactionManager implements ResourceTransactionManager {

		private final DataSourceTransactionManager delegate;

		OtherTransactionManager(DataSourceTransactionManager delegate) {
			this.delegate = delegate;
		}

		@Override
		public Object getResourceFactory() {
			return this.delegate.getResourceFactory();
		}

		@Override
		public TransactionStatus getTransaction(@Nullable TransactionDefinition definition) {
			return this.delegate.getTransaction(definition);
		}

		@Override
		public void commit(TransactionStatus status) {
			this.delegate.commit(status);
		}

		@Override
		public void rollback(TransactionStatus status) {
			this.delegate.rollback(status);
		}

	}

	@RestController
	static class Charges {

		private final AtomicInteger executions = new AtomicInteger();

		private final List<String> synchronizationEvents = new CopyOnWriteArrayList<>();

		private final JdbcTemplate jdbc;

		Charges(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		// Public, so that the transactional proxy hands it to the bean.
		public AtomicInteger executions() {
			return this.executions;
		}

		public List<String> synchronizationEvents() {
			return this.synchronizationEvents;
		}

		@PostMapping("/charges")
		@Idempotent
		@Transactional
		public Map<String, Object> charge(@RequestHeader("X-Outcome") String outcome,
				@RequestBody Map<String, Object> body) {
			this.executions.incrementAndGet();
			this.jdbc.update("INSERT INTO savepoint_test_charge (item) VALUES (?)", body.get("item"));
			// Registered by the handler, after the claim's savepoint, as the outbox
			// registers at its first append.
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

				@Override
				public void savepointRollback(Object savepoint) {
					Charges.this.synchronizationEvents.add("savepointRollback");
				}

				@Override
				public void beforeCommit(boolean readOnly) {
					Charges.this.synchronizationEvents.add("beforeCommit");
				}

			});
			if (outcome.equals("decline")) {
				throw new Declined();
			}
			return Map.of("charged", body.get("item"));
		}

	}

	@ResponseStatus(HttpStatus.PAYMENT_REQUIRED)
	static class Declined extends RuntimeException {

	}

}
