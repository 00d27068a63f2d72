package dev.idempotency.autoconfigure.web;

import java.net.URI;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.autoconfigure.web.WebTestApplication.Order;
import dev.idempotency.web.Idempotent;
import jakarta.servlet.http.HttpServletRequest;

import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Handlers whose responses carry credentials, and handlers whose duplicates wait, for the
 * end-to-end tests of what is stored and how long a duplicate waits.
 */
@RestController
class StoredResponsesController {

	private final JdbcTemplate jdbc;

	private final Gates gates;

	StoredResponsesController(JdbcTemplate jdbc, Gates gates) {
		this.jdbc = jdbc;
		this.gates = gates;
	}

	@PostMapping("/sessions")
	@Idempotent
	ResponseEntity<String> openSession(@RequestBody Order order) {
		this.gates.executions.incrementAndGet();
		return ResponseEntity.created(URI.create("/sessions/" + order.item()))
			.header(HttpHeaders.SET_COOKIE, "SESSION=" + order.item() + "; HttpOnly")
			.header(HttpHeaders.AUTHORIZATION, "Bearer token-of-" + order.item())
			.header(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"orders\"")
			.header("Authentication-Info", "nextnonce=\"n-" + order.item() + "\"")
			.header("X-Request-Note", "note-" + order.item())
			.body("{\"session\":\"" + order.item() + "\",\"secret\":\"s3cr3t-" + order.item() + "\"}");
	}

	@PostMapping("/waiting/orders")
	@Idempotent(waitFor = "${test.wait-for:30s}")
	ResponseEntity<String> placeWaiting(@RequestBody Order order, HttpServletRequest request) {
		return place(order, request);
	}

	@PostMapping("/briefly-waiting/orders")
	@Idempotent(waitFor = "300ms")
	ResponseEntity<String> placeBrieflyWaiting(@RequestBody Order order, HttpServletRequest request) {
		return place(order, request);
	}

	private ResponseEntity<String> place(Order order, HttpServletRequest request) {
		this.gates.executions.incrementAndGet();
		Long id = this.jdbc.queryForObject("INSERT INTO orders (item, amount) VALUES (?, ?) RETURNING id", Long.class,
				order.item(), order.amount());
		if (request.getHeader("X-Block") != null) {
			this.gates.pass();
		}
		if (this.gates.failNext.getAndSet(false)) {
			throw new IllegalStateException("Simulated failure after the write");
		}
		return ResponseEntity.created(URI.create("/orders/" + id)).body("{\"id\":" + id + "}");
	}

}
