package dev.idempotency.autoconfigure.slice;

import dev.idempotency.autoconfigure.slice.SliceTestApplication.ChargeController;
import dev.idempotency.test.AutoConfigureIdempotency;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;

import static dev.idempotency.test.IdempotencyMockMvc.idempotencyKey;
import static dev.idempotency.test.IdempotencyMockMvc.replayed;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The slice of an application that still lists the former location of the library's
 * migrations in its own Flyway: the outbox migration's {@code ${outbox_table}} gets its
 * value, because the slice brings the outbox's auto-configuration too.
 */
@WebMvcTest(controllers = ChargeController.class,
		properties = { "spring.flyway.locations=classpath:db/app-migrations/v2,classpath:db/idempotency/postgresql",
				"idempotency.jdbc.initialize-schema=never", "spring.datasource.hikari.maximum-pool-size=4" })
@AutoConfigureIdempotency
@PostgresTest
class AutoConfigureIdempotencyFormerFlywayLocationWebMvcTests {

	@Autowired
	private MockMvc mvc;

	@Test
	void theSliceOfAnApplicationThatListsTheFormerLocationStartsAndReplaysARetry() throws Exception {
		for (int attempt = 0; attempt < 2; attempt++) {
			this.mvc
				.perform(post("/charges").with(idempotencyKey("former-location"))
					.contentType(MediaType.APPLICATION_JSON)
					.content("{\"amount\":3}"))
				.andExpect(status().isCreated())
				.andExpect((attempt == 0) ? (result) -> {
				} : replayed());
		}
	}

}
