package dev.idempotency.web;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
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
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.support.GenericWebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

/**
 * The filter in a plain Spring MVC application, without Spring Boot, on PostgreSQL.
 */
@PostgresTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class IdempotencyFilterTests {

	private final DataSource dataSource;

	private GenericWebApplicationContext context;

	private MockMvc mvc;

	IdempotencyFilterTests(DataSource dataSource) {
		this.dataSource = dataSource;
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT,
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(dataSource);
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
	void resetExecutions() {
		this.context.getBean(Payments.class).executions.set(0);
	}

	@AfterAll
	void stopApplication() {
		this.context.close();
	}

	@Test
	void findsAnnotatedHandlersInTheApplicationContextAndReplays() throws Exception {
		MvcResult first = send("/payments/1", "{\"amount\":10,\"note\":\"a\"}", "p-1");
		MvcResult again = send("/payments/1", "{\"amount\":10,\"note\":\"a\"}", "p-1");
		assertThat(first.getResponse().getStatus()).isEqualTo(200);
		assertThat(again.getResponse().getContentAsByteArray()).isEqualTo(first.getResponse().getContentAsByteArray());
		assertThat(again.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
		assertThat(this.context.getBean(Payments.class).executions).hasValue(1);
	}

	@Test
	void samePatternWithAnotherPathVariableIsADifferentRequest() throws Exception {
		send("/payments/1", "{\"amount\":10}", "p-2");
		MvcResult other = send("/payments/2", "{\"amount\":10}", "p-2");
		assertThat(other.getResponse().getStatus()).isEqualTo(422);
		assertThat(other.getResponse().getContentAsString()).contains(IdempotencyProblemTypes.KEY_REUSED.toString());
	}

	@Test
	void fingerprintFieldsIgnoreTheOtherFields() throws Exception {
		MvcResult first = send("/refunds", "{\"order\":{\"id\":7},\"comment\":\"first\"}", "r-1");
		MvcResult again = send("/refunds", "{\"comment\":\"second\",\"order\":{\"id\":7}}", "r-1");
		assertThat(again.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
		assertThat(again.getResponse().getContentAsString()).isEqualTo(first.getResponse().getContentAsString());
		MvcResult otherOrder = send("/refunds", "{\"order\":{\"id\":8},\"comment\":\"first\"}", "r-1");
		assertThat(otherOrder.getResponse().getStatus()).isEqualTo(422);
	}

	@Test
	void optionalKeyLetsARequestWithoutOneRunUnprotected() throws Exception {
		this.mvc.perform(post("/refunds").contentType("application/json").content("{\"order\":{\"id\":1}}"))
			.andReturn();
		this.mvc.perform(post("/refunds").contentType("application/json").content("{\"order\":{\"id\":1}}"))
			.andReturn();
		assertThat(this.context.getBean(Payments.class).executions).hasValue(2);
	}

	@Test
	void requiredKeyIsRefusedWhenMissing() throws Exception {
		MvcResult result = this.mvc
			.perform(post("/payments/3").contentType("application/json").content("{\"amount\":1}"))
			.andReturn();
		assertThat(result.getResponse().getStatus()).isEqualTo(400);
		assertThat(result.getResponse().getContentType()).isEqualTo("application/problem+json");
		assertThat(this.context.getBean(Payments.class).executions).hasValue(0);
	}

	@Test
	void unannotatedHandlersAreUntouched() throws Exception {
		MvcResult result = this.mvc
			.perform(post("/plain").contentType("application/json").content("{}").header("Idempotency-Key", "x"))
			.andReturn();
		MvcResult again = this.mvc
			.perform(post("/plain").contentType("application/json").content("{}").header("Idempotency-Key", "x"))
			.andReturn();
		assertThat(result.getResponse().getContentAsString()).isEqualTo("plain");
		assertThat(again.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isNull();
		assertThat(this.context.getBean(Payments.class).executions).hasValue(2);
	}

	private MvcResult send(String path, String json, String key) throws Exception {
		return this.mvc.perform(post(path).contentType("application/json").content(json).header("Idempotency-Key", key))
			.andReturn();
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
			return new IdempotencyFilter(new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource)), transactionManager,
					dataSource);
		}

		@Bean
		Payments payments() {
			return new Payments();
		}

	}

	@RestController
	static class Payments {

		final AtomicInteger executions = new AtomicInteger();

		@PostMapping("/payments/{id}")
		@Idempotent
		Map<String, Object> pay(@PathVariable long id, @RequestBody Map<String, Object> body) {
			return Map.of("payment", id, "run", this.executions.incrementAndGet());
		}

		@PostMapping("/refunds")
		@Idempotent(required = false, fingerprintFields = "/order/id")
		Map<String, Object> refund(@RequestBody Map<String, Object> body) {
			return Map.of("run", this.executions.incrementAndGet(), "comment", String.valueOf(body.get("comment")));
		}

		@PostMapping("/plain")
		String plain() {
			this.executions.incrementAndGet();
			return "plain";
		}

	}

}
