package dev.idempotency.autoconfigure.web;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPOutputStream;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.autoconfigure.web.WebTestApplication.Order;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.web.error.ErrorPage;
import org.springframework.boot.web.error.ErrorPageRegistrar;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Isolation;
import org.springframework.util.MultiValueMap;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RequestPart;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.ModelAndView;

/**
 * Handlers written the way applications write them, on the paths that the plain order
 * endpoints of {@link WebTestApplication} do not take: isolation levels, forwards and
 * dispatches, form-like media types, gzip bodies, client text in headers, caught
 * constraint violations.
 */
@Configuration(proxyBeanMethods = false)
@Import({ ApplicationPaths.AccountsController.class, ApplicationPaths.AccountService.class,
		ApplicationPaths.PaymentsController.class, ApplicationPaths.DispatchController.class,
		ApplicationPaths.RepresentationsController.class, ApplicationPaths.RegistrationsController.class })
class ApplicationPaths {

	@Bean
	InitializingBean applicationPathsTables(JdbcTemplate jdbc) {
		return () -> {
			String serial = (DatabaseType.of(jdbc) == DatabaseType.MARIADB) ? "bigint AUTO_INCREMENT" : "bigserial";
			jdbc.execute("CREATE TABLE IF NOT EXISTS accounts (id varchar(255) PRIMARY KEY, balance int NOT NULL)");
			jdbc.execute("CREATE TABLE IF NOT EXISTS debits (id " + serial + " PRIMARY KEY, account text NOT NULL,"
					+ " amount int NOT NULL)");
			jdbc.execute("CREATE TABLE IF NOT EXISTS users (name varchar(255) PRIMARY KEY)");
		};
	}

	/**
	 * An error page that is an {@code @Idempotent} handler, for requests that fail with
	 * {@link ToTheErrorPage}.
	 */
	@Bean
	ErrorPageRegistrar idempotentErrorPage() {
		return (registry) -> registry.addErrorPages(new ErrorPage(ToTheErrorPage.class, "/error-pages/orders"));
	}

	static final class ToTheErrorPage extends RuntimeException {

		ToTheErrorPage() {
			super("Render the idempotent error page");
		}

	}

	record Debit(int amount) {
	}

	/**
	 * Debits that read a balance, wait until the concurrent debit has read it too, and
	 * write the balance less the amount: correct only in a serializable transaction.
	 */
	@Transactional
	static class AccountService {

		private final JdbcTemplate jdbc;

		private volatile CountDownLatch bothRead = new CountDownLatch(0);

		AccountService(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		/**
		 * Make the next debits wait for each other after reading the balance. Called
		 * through the proxy, so that the bean itself has the latch.
		 */
		public void expectConcurrentDebits(int debits) {
			this.bothRead = new CountDownLatch(debits);
		}

		@Transactional(isolation = Isolation.SERIALIZABLE)
		public Map<String, Object> debitSerializably(String account, int amount) {
			return debit(account, amount);
		}

		public Map<String, Object> debit(String account, int amount) {
			Integer balance = this.jdbc.queryForObject("SELECT balance FROM accounts WHERE id = ?", Integer.class,
					account);
			this.bothRead.countDown();
			try {
				this.bothRead.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
			if (balance == null || balance < amount) {
				throw new InsufficientFunds();
			}
			this.jdbc.update("UPDATE accounts SET balance = ? WHERE id = ?", balance - amount, account);
			this.jdbc.update("INSERT INTO debits (account, amount) VALUES (?, ?)", account, amount);
			return Map.of("account", account, "balance", balance - amount, "isolation", isolation());
		}

		String isolation() {
			return this.jdbc.queryForObject("SHOW transaction_isolation", String.class);
		}

	}

	@ResponseStatus(HttpStatus.PAYMENT_REQUIRED)
	static final class InsufficientFunds extends RuntimeException {

	}

	@RestController
	static class AccountsController {

		private final AccountService accounts;

		private final JdbcTemplate jdbc;

		AccountsController(AccountService accounts, JdbcTemplate jdbc) {
			this.accounts = accounts;
			this.jdbc = jdbc;
		}

		/** An unrelated request, with no key, that needs a connection. */
		@GetMapping("/accounts/{id}")
		String balance(@PathVariable String id) {
			return String
				.valueOf(this.jdbc.queryForList("SELECT balance FROM accounts WHERE id = ?", Integer.class, id).size());
		}

		/** The isolation is declared deeper down, on the service. */
		@PostMapping("/accounts/{id}/debits")
		@Idempotent
		ResponseEntity<Map<String, Object>> debit(@PathVariable String id, @RequestBody Debit debit) {
			return ResponseEntity.status(HttpStatus.CREATED).body(this.accounts.debitSerializably(id, debit.amount()));
		}

		/** The isolation is declared on the handler. */
		@PostMapping("/serializable/accounts/{id}/debits")
		@Idempotent
		@Transactional(isolation = Isolation.SERIALIZABLE)
		public ResponseEntity<Map<String, Object>> debitOnTheHandler(@PathVariable String id,
				@RequestBody Debit debit) {
			return ResponseEntity.status(HttpStatus.CREATED).body(this.accounts.debitSerializably(id, debit.amount()));
		}

		@PostMapping("/repeatable/isolation")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		@Transactional(isolation = Isolation.REPEATABLE_READ)
		public String repeatableRead() {
			return this.accounts.isolation();
		}

		@PostMapping("/timeout")
		@Idempotent
		@Transactional(timeout = 1)
		public ResponseEntity<String> slowerThanItsTimeout() {
			this.jdbc.queryForList("SELECT pg_sleep(3)");
			return ResponseEntity.status(HttpStatus.CREATED).body("done");
		}

	}

	static final class PaymentDeclined extends RuntimeException {

	}

	/**
	 * Single-transaction handlers whose failures are decided: an exception that the
	 * controller's {@code @ExceptionHandler} maps to 402, and an asynchronous result.
	 */
	@RestController
	static class PaymentsController {

		private final JdbcTemplate jdbc;

		private final Gates gates;

		PaymentsController(JdbcTemplate jdbc, Gates gates) {
			this.jdbc = jdbc;
			this.gates = gates;
		}

		@PostMapping("/single/payments")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		String pay(@RequestBody Order order, HttpServletRequest request) {
			this.gates.executions.incrementAndGet();
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
			if (request.getHeader("X-Block") != null) {
				this.gates.pass();
			}
			throw new PaymentDeclined();
		}

		@ExceptionHandler
		ResponseEntity<Map<String, String>> declined(PaymentDeclined ex) {
			return ResponseEntity.status(HttpStatus.PAYMENT_REQUIRED).body(Map.of("error", "declined"));
		}

		@PostMapping("/single/later")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		Object later(HttpServletRequest request) {
			this.gates.executions.incrementAndGet();
			if (request.getHeader("X-Block") != null) {
				this.gates.pass();
			}
			return CompletableFuture.supplyAsync(() -> {
				this.gates.asyncRuns.incrementAndGet();
				return "later";
			});
		}

	}

	/**
	 * Requests that reach {@code @Idempotent} handlers of {@link WebTestApplication}
	 * through another dispatch than a plain request: a forward from an alias, an include,
	 * an asynchronous dispatch, an error page; and a GET handler, which serves HEAD too.
	 */
	@RestController
	static class DispatchController {

		private final Gates gates;

		DispatchController(Gates gates) {
			this.gates = gates;
		}

		@PostMapping("/v1/orders")
		ModelAndView alias() {
			return new ModelAndView("forward:/orders");
		}

		@PostMapping("/included/orders")
		void include(HttpServletRequest request, HttpServletResponse response) throws ServletException, IOException {
			request.getRequestDispatcher("/orders").include(request, response);
		}

		@PostMapping("/dispatched/orders")
		void dispatch(HttpServletRequest request) {
			request.startAsync().dispatch("/orders");
		}

		@PostMapping("/failing/orders")
		void fail() {
			throw new ToTheErrorPage();
		}

		/**
		 * Tomcat dispatches to an error page with GET, whatever the failed request's
		 * method.
		 */
		@GetMapping("/error-pages/orders")
		@Idempotent
		ResponseEntity<String> errorPage() {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body("try again later");
		}

		@GetMapping("/reports")
		@Idempotent
		ResponseEntity<String> report() {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.ok().header("X-Report", "1").body("report " + this.gates.executions.get());
		}

	}

	/**
	 * Handlers whose request or response is more than a JSON document: bodies under a
	 * media type that starts like a form's, raw multipart parts, gzip bodies with their
	 * representation headers, and client text copied into a header.
	 */
	@RestController
	static class RepresentationsController {

		private final Gates gates;

		RepresentationsController(Gates gates) {
			this.gates = gates;
		}

		@PutMapping("/documents")
		@Idempotent
		ResponseEntity<String> put(@RequestBody(required = false) String document,
				@RequestParam MultiValueMap<String, String> parameters) {
			this.gates.executions.incrementAndGet();
			return ResponseEntity
				.ok("stored " + ((document != null) ? document.length() : 0) + " characters and " + parameters);
		}

		@PostMapping("/parts")
		@Idempotent
		ResponseEntity<String> parts(@RequestPart("data") byte[] data) {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.ok(HexFormat.of().formatHex(data));
		}

		@PostMapping("/exports")
		@Idempotent
		ResponseEntity<byte[]> export(@RequestBody Order order) throws IOException {
			this.gates.executions.incrementAndGet();
			ByteArrayOutputStream gzip = new ByteArrayOutputStream();
			try (GZIPOutputStream out = new GZIPOutputStream(gzip)) {
				out.write(("{\"item\":\"" + order.item() + "\"}").getBytes(StandardCharsets.UTF_8));
			}
			return ResponseEntity.status(HttpStatus.CREATED)
				.header("Content-Type", "application/json")
				.header("Content-Encoding", "gzip")
				.header("Content-Disposition", "attachment; filename=\"export.json.gz\"")
				.header("Content-Language", "en")
				.body(gzip.toByteArray());
		}

		@PostMapping("/links")
		@Idempotent
		void link(@RequestBody Order order, HttpServletResponse response) throws IOException {
			this.gates.executions.incrementAndGet();
			linkWithoutTheLibrary(order, response);
		}

		@PostMapping("/plain/links")
		void linkWithoutTheLibrary(@RequestBody Order order, HttpServletResponse response) throws IOException {
			response.setStatus(HttpStatus.CREATED.value());
			response.setHeader("Location", "/links/" + order.item());
			response.getWriter().write("linked");
		}

	}

	/**
	 * A registration that answers a repeated name by catching the constraint violation,
	 * which works in autocommit mode and aborts a surrounding PostgreSQL transaction.
	 */
	@RestController
	static class RegistrationsController {

		private final JdbcTemplate jdbc;

		private final Gates gates;

		RegistrationsController(JdbcTemplate jdbc, Gates gates) {
			this.jdbc = jdbc;
			this.gates = gates;
		}

		@PostMapping("/registrations")
		@Idempotent
		ResponseEntity<String> register(@RequestBody Order user) {
			this.gates.executions.incrementAndGet();
			try {
				this.jdbc.update("INSERT INTO users (name) VALUES (?)", user.item());
				return ResponseEntity.status(HttpStatus.CREATED).body("registered");
			}
			catch (DuplicateKeyException ex) {
				return ResponseEntity.ok("already registered");
			}
		}

	}

}
