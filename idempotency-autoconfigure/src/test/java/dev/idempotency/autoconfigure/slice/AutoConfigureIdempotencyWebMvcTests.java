package dev.idempotency.autoconfigure.slice;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.autoconfigure.slice.SliceTestApplication.ChargeController;
import dev.idempotency.test.AutoConfigureIdempotency;
import dev.idempotency.test.IdempotencyRestTestClient;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestDatabase;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.core.env.Environment;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.RequestBuilder;
import org.springframework.test.web.servlet.client.RestTestClient;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

import static dev.idempotency.test.IdempotencyMockMvc.idempotencyKey;
import static dev.idempotency.test.IdempotencyMockMvc.notReplayed;
import static dev.idempotency.test.IdempotencyMockMvc.replayed;
import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * {@code @WebMvcTest} with {@code @AutoConfigureIdempotency} and {@code @PostgresTest}:
 * the slice's {@code MockMvc} goes through the real filter and the real key store, on the
 * test schema handed over as Boot's {@link JdbcConnectionDetails}, which wins over a
 * {@code spring.datasource.url} that points nowhere.
 */
@WebMvcTest(controllers = ChargeController.class,
		properties = { "spring.datasource.url=jdbc:postgresql://127.0.0.1:1/nowhere",
				"spring.datasource.hikari.maximum-pool-size=4" })
@AutoConfigureIdempotency
@PostgresTest
class AutoConfigureIdempotencyWebMvcTests {

	@Autowired
	private MockMvc mvc;

	@Autowired
	private ChargeController controller;

	@Autowired
	private DataSource dataSource;

	@Autowired
	private JdbcConnectionDetails connectionDetails;

	@Autowired
	private Environment environment;

	@Test
	void theTestSchemaIsAConnectionDetailsBeanThatWinsOverTheProperties() {
		assertThat(this.connectionDetails.getClass().getSimpleName()).isEqualTo("TestSchemaConnectionDetails");
		assertThat(this.environment.getProperty("spring.datasource.url"))
			.isEqualTo("jdbc:postgresql://127.0.0.1:1/nowhere");
		assertThat(this.connectionDetails.getJdbcUrl()).startsWith(TestDatabase.get().getJdbcUrl())
			.contains("currentSchema=it_");
		assertThat(((HikariDataSource) this.dataSource).getJdbcUrl()).isEqualTo(this.connectionDetails.getJdbcUrl());
		assertThat(new JdbcTemplate(this.dataSource).queryForObject("SELECT current_schema()", String.class))
			.startsWith("it_");
	}

	@Test
	void aRetryIsReplayedFromPostgresql() throws Exception {
		this.mvc.perform(charge("/charges", "slice-replay", 100))
			.andExpect(status().isCreated())
			.andExpect(notReplayed());
		this.mvc.perform(charge("/charges", "slice-replay", 100)).andExpect(status().isCreated()).andExpect(replayed());
		this.mvc.perform(charge("/charges", "slice-replay", 999)).andExpect(status().isUnprocessableContent());
		Integer rows = new JdbcTemplate(this.dataSource).queryForObject("SELECT count(*) FROM idempotency_key",
				Integer.class);
		assertThat(rows).isPositive();
	}

	@Test
	void aRequestThatMeetsItsKeyInProgressGetsA409() throws Exception {
		CompletableFuture<Integer> first = CompletableFuture
			.supplyAsync(() -> perform(charge("/slow-charges", "slice-in-progress", 1)));
		assertThat(this.controller.entered.await(30, TimeUnit.SECONDS)).isTrue();
		this.mvc.perform(charge("/slow-charges", "slice-in-progress", 1))
			.andExpect(status().isConflict())
			.andExpect(notReplayed());
		this.controller.release.countDown();
		assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(201);
		this.mvc.perform(charge("/slow-charges", "slice-in-progress", 1)).andExpect(replayed());
	}

	@Test
	void restTestClientHelpersSendTheKeyAndSeeTheReplay() {
		RestTestClient client = RestTestClient.bindTo(this.mvc).build();
		for (int attempt = 0; attempt < 2; attempt++) {
			RestTestClient.ResponseSpec response = client.post()
				.uri("/charges")
				.headers(IdempotencyRestTestClient.idempotencyKey("slice-rest"))
				.contentType(MediaType.APPLICATION_JSON)
				.body("{\"amount\":7}")
				.exchange()
				.expectStatus()
				.isCreated();
			response.expectAll(
					(attempt == 0) ? IdempotencyRestTestClient.notReplayed() : IdempotencyRestTestClient.replayed());
		}
	}

	private int perform(RequestBuilder request) {
		try {
			return this.mvc.perform(request).andReturn().getResponse().getStatus();
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	private static MockHttpServletRequestBuilder charge(String path, String key, int amount) {
		return post(path).with(idempotencyKey(key))
			.contentType(MediaType.APPLICATION_JSON)
			.content("{\"amount\":" + amount + "}");
	}

}
