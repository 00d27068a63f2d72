package dev.idempotency.benchmarks;

import java.net.URI;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import dev.idempotency.web.IdempotencyFilter;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
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

	@Bean
	static BeanPostProcessor roundTripCounter() {
		return RoundTrips.counter(HttpBenchmark.COUNT_ROUND_TRIPS);
	}

	@RestController
	static class PaymentsController {

		private static final String CLAIM = """
				INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, owner, locked_until,
				                             created_at, expires_at)
				VALUES ('', ?, ?, 'IN_PROGRESS', ?, now() + interval '1 minute', now(), now() + interval '1 day')
				ON CONFLICT DO NOTHING
				""";

		private static final String COMPLETE = """
				UPDATE idempotency_key
				SET status = 'DONE', http_status = 201, response_headers = ?, response_body = ?, owner = NULL,
				    locked_until = NULL, completed_at = now(), expires_at = now() + interval '1 day'
				WHERE scope = '' AND idempotency_key = ? AND owner = ?
				""";

		private final JdbcTemplate jdbc;

		private final JsonMapper json;

		PaymentsController(JdbcTemplate jdbc, JsonMapper json) {
			this.jdbc = jdbc;
			this.json = json;
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

		/**
		 * What a single-transaction claim costs written by hand: the same statements as
		 * {@code @Idempotent} single-transaction (claim, business insert, completion with
		 * the response, one commit), with none of the library's work around them. The
		 * difference between the two rows is the cost above the SQL.
		 */
		@PostMapping("/by-hand")
		@Transactional
		ResponseEntity<byte[]> byHand(@RequestHeader(IdempotencyFilter.KEY_HEADER) String key, @RequestBody byte[] body)
				throws NoSuchAlgorithmException {
			String hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
			String owner = UUID.randomUUID().toString();
			int claimed = this.jdbc.update(CLAIM, key, hash, owner);
			if (claimed == 0) {
				return ResponseEntity.status(HttpStatus.CONFLICT).build();
			}
			Payment payment = this.json.readValue(body, Payment.class);
			Long id = this.jdbc.queryForObject("INSERT INTO payment (ref, amount) VALUES (?, ?) RETURNING id",
					Long.class, payment.ref(), payment.amount());
			String location = "/payments/" + id;
			byte[] response = this.json.writeValueAsBytes(Map.of("id", id, "ref", payment.ref(), "status", "CHARGED"));
			this.jdbc.update(COMPLETE, "Content-Type: application/json\nLocation: " + location + "\n", response, key,
					owner);
			return ResponseEntity.created(URI.create(location)).contentType(MediaType.APPLICATION_JSON).body(response);
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
