package dev.idempotency.samples.payments;

import java.util.UUID;

import jakarta.validation.Valid;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;

import dev.idempotency.core.jdbc.DatabaseType;

import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The client-chosen id example: {@code PUT} with an id the client made sets the whole
 * state, so sending it twice converges on the same row. No key table is needed.
 * <p>
 * One upsert creates or updates the row and tells which it did, by what it returns rather
 * than by an update count: MariaDB's driver counts a row that
 * {@code ON DUPLICATE KEY UPDATE} found and left as it was as 1, as an inserted one,
 * unless the connection sets {@code useAffectedRows}.
 */
@RestController
class PaymentMethodController {

	// xmax = 0 only for a row this statement inserted, not for one it updated.
	private static final String POSTGRESQL_UPSERT = """
			INSERT INTO payment_method (id, holder, last4) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, last4 = excluded.last4
			RETURNING (xmax = 0)
			""";

	// MariaDB has no xmax: the row counts its updates, and only an insert leaves 0.
	private static final String MARIADB_UPSERT = """
			INSERT INTO payment_method (id, holder, last4) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE holder = VALUES(holder), last4 = VALUES(last4), revision = revision + 1
			RETURNING (revision = 0)
			""";

	private final JdbcTemplate jdbc;

	private final String upsert;

	PaymentMethodController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
		this.upsert = switch (DatabaseType.of(jdbc)) {
			case POSTGRESQL -> POSTGRESQL_UPSERT;
			case MARIADB -> MARIADB_UPSERT;
		};
	}

	@PutMapping("/payment-methods/{id}")
	@Transactional
	ResponseEntity<PaymentMethod> put(@PathVariable UUID id, @Valid @RequestBody PaymentMethod method) {
		Boolean created = this.jdbc.queryForObject(this.upsert, Boolean.class, id, method.holder(), method.last4());
		return ResponseEntity.status(Boolean.TRUE.equals(created) ? HttpStatus.CREATED : HttpStatus.OK)
			.body(new PaymentMethod(method.holder(), method.last4()));
	}

	/**
	 * A stored payment method.
	 *
	 * @param holder the card holder, at most 100 characters
	 * @param last4 the last four digits
	 */
	record PaymentMethod(@NotBlank @Size(max = 100) String holder,
			@NotNull @Pattern(regexp = "[0-9]{4}") String last4) {
	}

}
