package dev.idempotency.benchmarks;

import java.net.URI;
import java.util.Map;

import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The service of the HTTP benchmark: one business insert behind a bare endpoint and
 * behind {@code @Idempotent} endpoints in each claim mode.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(HttpPayments.PaymentsController.class)
class HttpPayments {

	static final String TABLE = """
			CREATE TABLE IF NOT EXISTS payment (id bigserial PRIMARY KEY, ref text NOT NULL, amount int NOT NULL)
			""";

	@RestController
	static class PaymentsController {

		private final JdbcTemplate jdbc;

		PaymentsController(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@PostMapping("/bare")
		ResponseEntity<Map<String, Object>> bare(@RequestBody Payment payment) {
			return charge(payment);
		}

		@PostMapping("/bare-transactional")
		@Transactional
		ResponseEntity<Map<String, Object>> bareTransactional(@RequestBody Payment payment) {
			return charge(payment);
		}

		@PostMapping("/two-phase")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<Map<String, Object>> twoPhase(@RequestBody Payment payment) {
			return charge(payment);
		}

		@PostMapping("/single")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		ResponseEntity<Map<String, Object>> single(@RequestBody Payment payment) {
			return charge(payment);
		}

		private ResponseEntity<Map<String, Object>> charge(Payment payment) {
			Long id = this.jdbc.queryForObject("INSERT INTO payment (ref, amount) VALUES (?, ?) RETURNING id",
					Long.class, payment.ref(), payment.amount());
			return ResponseEntity.created(URI.create("/payments/" + id))
				.body(Map.of("id", id, "ref", payment.ref(), "status", "CHARGED"));
		}

	}

	record Payment(String ref, int amount) {
	}

}
