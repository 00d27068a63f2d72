package dev.idempotency.autoconfigure.slice;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.slice.SliceTestApplication.ChargeController;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.AutoConfigureIdempotency;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;

import static dev.idempotency.test.IdempotencyMockMvc.idempotencyKey;
import static dev.idempotency.test.IdempotencyMockMvc.notReplayed;
import static dev.idempotency.test.IdempotencyMockMvc.replayed;
import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The slice of an application whose Flyway owns its schema (its own migrations, and
 * {@code initialize-schema=never} as such applications set):
 * {@code @AutoConfigureIdempotency} brings the application's database initialization, so
 * the slice's database gets the application's migrations and the library's, and a retry
 * is replayed.
 */
@WebMvcTest(controllers = ChargeController.class,
		properties = { "spring.flyway.locations=classpath:db/app-migrations/v2",
				"idempotency.jdbc.initialize-schema=never", "spring.datasource.hikari.maximum-pool-size=4" })
@AutoConfigureIdempotency
@PostgresTest
class AutoConfigureIdempotencyFlywayWebMvcTests {

	@Autowired
	private MockMvc mvc;

	@Autowired
	private DataSource dataSource;

	@Test
	void theSliceOfAFlywayApplicationRunsItsMigrationsAndTheLibrarysAndReplaysARetry() throws Exception {
		this.mvc.perform(charge("flyway-slice", 10)).andExpect(status().isCreated()).andExpect(notReplayed());
		this.mvc.perform(charge("flyway-slice", 10)).andExpect(status().isCreated()).andExpect(replayed());
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		assertThat(jdbc.queryForList("SELECT version FROM flyway_schema_history ORDER BY installed_rank", String.class))
			.containsExactly("1", "2");
		assertThat(jdbc.queryForList("SELECT version FROM " + SchemaScripts.FLYWAY_HISTORY_TABLE
				+ " WHERE version IS NOT NULL ORDER BY installed_rank", String.class))
			.containsExactly("0", "1.0.0.1", "1.0.0.2", "1.0.0.3");
		assertThat(jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'flyway-slice'",
				Integer.class))
			.isOne();
	}

	private static MockHttpServletRequestBuilder charge(String key, int amount) {
		return post("/charges").with(idempotencyKey(key))
			.contentType(MediaType.APPLICATION_JSON)
			.content("{\"amount\":" + amount + "}");
	}

}
