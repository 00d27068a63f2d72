package dev.idempotency.web;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PostgresTest;
import jakarta.servlet.Filter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import org.springframework.context.annotation.AnnotatedBeanDefinitionReader;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.mock.web.MockServletContext;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.support.GenericWebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

/**
 * The default scope behind Spring Security: each authenticated user has keys of their
 * own, and anonymous requests share the global scope.
 */
@PostgresTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SpringSecurityScopeTests {

	private final DataSource dataSource;

	private GenericWebApplicationContext context;

	private MockMvc mvc;

	SpringSecurityScopeTests(DataSource dataSource) {
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
		new AnnotatedBeanDefinitionReader(this.context).register(SecuredApplication.class);
		this.context.refresh();
		this.mvc = MockMvcBuilders.webAppContextSetup(this.context)
			.addFilters(this.context.getBean("springSecurityFilterChain", Filter.class),
					this.context.getBean(IdempotencyFilter.class))
			.build();
	}

	@AfterAll
	void stopApplication() {
		this.context.close();
	}

	@Test
	void authenticatedUsersWithTheSameKeyNeverSeeEachOthersResponse() throws Exception {
		MvcResult alice = this.mvc.perform(transfer("t-1").header("Authorization", basic("alice"))).andReturn();
		MvcResult bob = this.mvc.perform(transfer("t-1").header("Authorization", basic("bob"))).andReturn();
		MvcResult aliceAgain = this.mvc.perform(transfer("t-1").header("Authorization", basic("alice"))).andReturn();
		assertThat(alice.getResponse().getContentAsString()).contains("alice");
		assertThat(bob.getResponse().getContentAsString()).contains("bob").doesNotContain("alice");
		assertThat(bob.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isNull();
		assertThat(aliceAgain.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
		assertThat(aliceAgain.getResponse().getContentAsString()).isEqualTo(alice.getResponse().getContentAsString());
		assertThat(new JdbcTemplate(this.dataSource).queryForList(
				"SELECT scope FROM idempotency_key WHERE idempotency_key = 't-1' ORDER BY scope", String.class))
			.containsExactly("alice", "bob");
	}

	@Test
	void anonymousRequestsShareTheGlobalScope() throws Exception {
		this.mvc.perform(transfer("t-2")).andReturn();
		MvcResult again = this.mvc.perform(transfer("t-2")).andReturn();
		assertThat(again.getResponse().getHeader(IdempotencyFilter.REPLAYED_HEADER)).isEqualTo("true");
		assertThat(new JdbcTemplate(this.dataSource)
			.queryForObject("SELECT scope FROM idempotency_key WHERE idempotency_key = 't-2'", String.class)).isEmpty();
	}

	private static MockHttpServletRequestBuilder transfer(String key) {
		return post("/transfers").contentType("application/json")
			.content("{\"amount\":5}")
			.header("Idempotency-Key", key);
	}

	private static String basic(String user) {
		return "Basic " + Base64.getEncoder().encodeToString((user + ":secret").getBytes(StandardCharsets.UTF_8));
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	@EnableWebSecurity
	static class SecuredApplication {

		@Bean
		SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
			return http.authorizeHttpRequests((requests) -> requests.anyRequest().permitAll())
				.httpBasic(Customizer.withDefaults())
				.csrf((csrf) -> csrf.disable())
				.build();
		}

		@Bean
		InMemoryUserDetailsManager users() {
			return new InMemoryUserDetailsManager(User.withUsername("alice").password("{noop}secret").build(),
					User.withUsername("bob").password("{noop}secret").build());
		}

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
		Transfers transfers() {
			return new Transfers();
		}

	}

	@RestController
	static class Transfers {

		private final AtomicInteger runs = new AtomicInteger();

		@PostMapping("/transfers")
		@Idempotent
		Map<String, Object> transfer(java.security.Principal principal) {
			return Map.of("by", (principal != null) ? principal.getName() : "anonymous", "run",
					this.runs.incrementAndGet());
		}

	}

}
