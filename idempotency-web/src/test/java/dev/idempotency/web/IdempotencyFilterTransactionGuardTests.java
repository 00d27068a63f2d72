package dev.idempotency.web;

import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.StoreTransactionsTests.ForgetfulTransactionManager;
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
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

/**
 * A transaction manager that claims the key store's {@code DataSource} but binds none of
 * its connections passes the startup check; each request then fails before its handler
 * runs, and gives back the key it claimed.
 */
@PostgresTest
class IdempotencyFilterTransactionGuardTests {

	@Test
	void aTransactionWithoutAConnectionOfTheKeysFailsBeforeTheHandlerAndReleasesTheKey(DataSource dataSource)
			throws Exception {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT,
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(dataSource);
		try (GenericWebApplicationContext context = new GenericWebApplicationContext(new MockServletContext())) {
			context.registerBean(DataSource.class, () -> dataSource);
			new AnnotatedBeanDefinitionReader(context).register(Application.class);
			context.refresh();
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context)
				.addFilters(context.getBean(IdempotencyFilter.class))
				.build();
			assertThatIllegalStateException()
				.isThrownBy(() -> mvc.perform(post("/transfers").header("Idempotency-Key", "g-1")))
				.withMessageContaining("holds no connection of it");
			assertThat(context.getBean(Transfers.class).executions).hasValue(0);
			assertThat(new JdbcTemplate(dataSource)
				.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'g-1'", Integer.class))
				.isZero();
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class Application {

		@Bean
		IdempotencyFilter idempotencyFilter(DataSource dataSource) {
			return new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)),
					new ForgetfulTransactionManager(dataSource), null);
		}

		@Bean
		Transfers transfers() {
			return new Transfers();
		}

	}

	@RestController
	static class Transfers {

		final AtomicInteger executions = new AtomicInteger();

		@PostMapping("/transfers")
		@Idempotent
		String transfer() {
			this.executions.incrementAndGet();
			return "done";
		}

	}

}
