package dev.idempotency.benchmarks;

import java.net.URI;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import dev.idempotency.web.IdempotencyFilter;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The service of the HTTP benchmark: one business insert behind a bare endpoint, behind
 * {@code @Idempotent} endpoints in each claim mode, and behind the same protocol written
 * by hand.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({ HttpPayments.PaymentsController.class, HttpPayments.SeedKeys.class })
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

		private final JdbcTemplate jdbc;

		private final JsonMapper json;

		private final SeedKeys keys;

		PaymentsController(JdbcTemplate jdbc, JsonMapper json, SeedKeys keys) {
			this.jdbc = jdbc;
			this.json = json;
			this.keys = keys;
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
		 * The seed's protocol written by hand, as its text spells it out:
		 * {@code tryStart} inserts the IN_PROGRESS row in a transaction of its own
		 * ({@code REQUIRES_NEW}), so that a duplicate sees it at once; a duplicate reads
		 * the row (422, 409 or the stored response); the business write and the DONE
		 * update share the handler's transaction. Two commits per request, as in
		 * two-phase mode.
		 */
		@PostMapping("/by-hand-two-phase")
		@Transactional
		ResponseEntity<byte[]> byHandTwoPhase(@RequestHeader(IdempotencyFilter.KEY_HEADER) String key,
				@RequestBody byte[] body) {
			String hash = this.keys.hash(body);
			if (!this.keys.tryStart(key, hash)) {
				return this.keys.existing(key, hash);
			}
			return chargeAndComplete(key, body);
		}

		/**
		 * The same in one transaction: the claim is the handler's first statement, an
		 * {@code INSERT … ON CONFLICT DO NOTHING} (a plain insert's unique violation
		 * would abort the transaction), a duplicate blocks on the key until the first
		 * commits and then reads its row. One commit per request, as in
		 * single-transaction mode.
		 */
		@PostMapping("/by-hand")
		@Transactional
		ResponseEntity<byte[]> byHand(@RequestHeader(IdempotencyFilter.KEY_HEADER) String key,
				@RequestBody byte[] body) {
			String hash = this.keys.hash(body);
			if (this.jdbc.update(SeedKeys.CLAIM + " ON CONFLICT DO NOTHING", key, hash) == 0) {
				return this.keys.existing(key, hash);
			}
			return chargeAndComplete(key, body);
		}

		private ResponseEntity<byte[]> chargeAndComplete(String key, byte[] body) {
			Payment payment = this.json.readValue(body, Payment.class);
			Long id = this.jdbc.queryForObject("INSERT INTO payment (ref, amount) VALUES (?, ?) RETURNING id",
					Long.class, payment.ref(), payment.amount());
			String location = "/payments/" + id;
			byte[] response = this.json.writeValueAsBytes(Map.of("id", id, "ref", payment.ref(), "status", "CHARGED"));
			this.jdbc.update(SeedKeys.COMPLETE, location, response, key);
			return ResponseEntity.created(URI.create(location)).contentType(MediaType.APPLICATION_JSON).body(response);
		}

		private ResponseEntity<Map<String, Object>> charge(Payment payment) {
			Long id = this.jdbc.queryForObject("INSERT INTO payment (ref, amount) VALUES (?, ?) RETURNING id",
					Long.class, payment.ref(), payment.amount());
			return ResponseEntity.created(URI.create("/payments/" + id))
				.body(Map.of("id", id, "ref", payment.ref(), "status", "CHARGED"));
		}

	}

	/**
	 * The key table as the seed's protocol uses it by hand: the library's table, so that
	 * both write the same rows, without an owner token (the seed has none).
	 */
	static class SeedKeys {

		static final String CLAIM = """
				INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, locked_until, created_at,
				                             expires_at)
				VALUES ('', ?, ?, 'IN_PROGRESS', now() + interval '1 minute', now(), now() + interval '1 day')
				""";

		static final String COMPLETE = """
				UPDATE idempotency_key
				SET status = 'DONE', http_status = 201, response_headers = ?, response_body = ?, locked_until = NULL,
				    completed_at = now(), expires_at = now() + interval '1 day'
				WHERE scope = '' AND idempotency_key = ? AND status = 'IN_PROGRESS'
				""";

		private static final String FIND = """
				SELECT request_hash, status, http_status, response_headers, response_body FROM idempotency_key
				WHERE scope = '' AND idempotency_key = ?
				""";

		private final JdbcTemplate jdbc;

		private final JsonMapper json;

		SeedKeys(JdbcTemplate jdbc, JsonMapper json) {
			this.jdbc = jdbc;
			this.json = json;
		}

		/**
		 * The seed's {@code tryStart}: the IN_PROGRESS row committed before any business
		 * work, a unique violation meaning that another request began.
		 */
		@Transactional(propagation = Propagation.REQUIRES_NEW)
		public boolean tryStart(String key, String hash) {
			try {
				this.jdbc.update(CLAIM, key, hash);
				return true;
			}
			catch (DuplicateKeyException ex) {
				return false;
			}
		}

		/**
		 * SHA-256 of the body as normalised JSON (its members sorted), as the seed
		 * suggests.
		 */
		String hash(byte[] body) {
			try {
				byte[] normalised = this.json.writeValueAsBytes(this.json.readValue(body, TreeMap.class));
				return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(normalised));
			}
			catch (NoSuchAlgorithmException ex) {
				throw new IllegalStateException(ex);
			}
		}

		/**
		 * Answer a duplicate from the row: 422 for another body, 409 while in progress,
		 * the stored response once done.
		 */
		ResponseEntity<byte[]> existing(String key, String hash) {
			return this.jdbc.query(FIND, (rs) -> {
				if (!rs.next()) {
					return ResponseEntity.status(HttpStatus.CONFLICT).<byte[]>build();
				}
				if (!rs.getString("request_hash").equals(hash)) {
					return ResponseEntity.status(422).<byte[]>build();
				}
				if (rs.getString("status").equals("IN_PROGRESS")) {
					return ResponseEntity.status(HttpStatus.CONFLICT).<byte[]>build();
				}
				return ResponseEntity.status(rs.getInt("http_status"))
					.location(URI.create(rs.getString("response_headers")))
					.contentType(MediaType.APPLICATION_JSON)
					.body(rs.getBytes("response_body"));
			}, key);
		}

	}

	record Payment(String ref, int amount) {
	}

}
