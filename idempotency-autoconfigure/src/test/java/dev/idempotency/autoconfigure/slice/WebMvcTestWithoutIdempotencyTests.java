package dev.idempotency.autoconfigure.slice;

import dev.idempotency.autoconfigure.slice.SliceTestApplication.ChargeController;
import dev.idempotency.web.IdempotencyFilter;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.ApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A plain {@code @WebMvcTest} leaves the idempotency features out, as it leaves out the
 * {@code DataSource}: {@link AutoConfigureIdempotencyWebMvcTests} shows what the
 * annotation adds.
 */
@WebMvcTest(controllers = ChargeController.class)
class WebMvcTestWithoutIdempotencyTests {

	@Autowired
	private ApplicationContext context;

	@Test
	void aPlainSliceHasNoIdempotencyFilter() {
		assertThat(this.context.getBeanNamesForType(IdempotencyFilter.class)).isEmpty();
	}

}
