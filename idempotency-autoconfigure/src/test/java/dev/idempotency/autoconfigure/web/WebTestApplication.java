package dev.idempotency.autoconfigure.web;

import java.io.IOException;
import java.net.URI;
import java.security.Principal;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;
import org.springframework.validation.annotation.Validated;
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.multipart.MultipartFile;
import org.springframework.web.server.ResponseStatusException;

/**
 * A small service with idempotent endpoints that write to the database, for the
 * end-to-end tests.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import({ WebTestApplication.OrdersController.class, WebTestApplication.StrictOrdersController.class,
		WebTestApplication.AsyncController.class, ApplicationPaths.class })
class WebTestApplication {

	@Bean
	Tables tables(JdbcTemplate jdbc) {
		return new Tables(jdbc);
	}

	@Bean
	Gates gates() {
		return new Gates();
	}

	/**
	 * Stands in for Spring Security: the {@code X-User} header authenticates, with the
	 * comma-separated roles of {@code X-Roles}.
	 */
	@Bean
	FilterRegistrationBean<OncePerRequestFilter> testAuthentication() {
		FilterRegistrationBean<OncePerRequestFilter> registration = new FilterRegistrationBean<>(
				new OncePerRequestFilter() {
					@Override
					protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response,
							FilterChain chain) throws ServletException, IOException {
						String user = request.getHeader("X-User");
						if (user == null) {
							chain.doFilter(request, response);
							return;
						}
						Principal principal = () -> user;
						String roles = request.getHeader("X-Roles");
						Set<String> granted = (roles != null) ? Set.of(roles.split(",")) : Set.of();
						chain.doFilter(new HttpServletRequestWrapper(request) {
							@Override
							public Principal getUserPrincipal() {
								return principal;
							}

							@Override
							public boolean isUserInRole(String role) {
								return granted.contains(role);
							}
						}, response);
					}
				});
		registration.setOrder(-100);
		return registration;
	}

	record Order(String item, int amount) {
	}

	static final class Tables implements InitializingBean {

		private final JdbcTemplate jdbc;

		Tables(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@Override
		public void afterPropertiesSet() {
			if (DatabaseType.of(this.jdbc) == DatabaseType.MARIADB) {
				this.jdbc.execute("""
						CREATE TABLE IF NOT EXISTS orders (id bigint AUTO_INCREMENT PRIMARY KEY, item text NOT NULL,
						    amount int NOT NULL, principal text)""");
				// MariaDB checks a foreign key at each statement: it has no deferred one.
				return;
			}
			this.jdbc.execute("""
					CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, item text NOT NULL,
					    amount int NOT NULL, principal text)""");
			this.jdbc.execute("CREATE TABLE IF NOT EXISTS parent (id int PRIMARY KEY)");
			this.jdbc.execute("""
					CREATE TABLE IF NOT EXISTS child (id int PRIMARY KEY,
					    parent_id int NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)""");
		}

	}

	/**
	 * Lets a test hold a handler inside its transaction.
	 */
	static final class Gates {

		final AtomicInteger executions = new AtomicInteger();

		final AtomicBoolean failNext = new AtomicBoolean();

		volatile CountDownLatch entered = new CountDownLatch(1);

		volatile CountDownLatch open = new CountDownLatch(0);

		/** The database backend of the last request that passed {@link #pass()}. */
		volatile int backendPid;

		final AtomicInteger asyncRuns = new AtomicInteger();

		void reset() {
			this.executions.set(0);
			this.asyncRuns.set(0);
			this.backendPid = 0;
			this.failNext.set(false);
			this.entered = new CountDownLatch(1);
			this.open = new CountDownLatch(0);
		}

		CountDownLatch close() {
			this.open = new CountDownLatch(1);
			return this.open;
		}

		void pass() {
			this.entered.countDown();
			try {
				if (!this.open.await(30, TimeUnit.SECONDS)) {
					throw new IllegalStateException("The test never opened the gate");
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
		}

	}

	@RestController
	static class OrdersController {

		private final JdbcTemplate jdbc;

		private final Gates gates;

		OrdersController(JdbcTemplate jdbc, Gates gates) {
			this.jdbc = jdbc;
			this.gates = gates;
		}

		@PostMapping("/orders")
		@Idempotent
		ResponseEntity<Map<String, Object>> placeOrder(@RequestBody Order order, HttpServletRequest request) {
			return place(order, request);
		}

		@PostMapping("/single/orders")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		ResponseEntity<Map<String, Object>> placeOrderInOneTransaction(@RequestBody Order order,
				HttpServletRequest request) {
			return place(order, request);
		}

		@PostMapping("/two-phase/orders")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<Map<String, Object>> placeOrderInTwoPhases(@RequestBody Order order,
				HttpServletRequest request) {
			return place(order, request);
		}

		@PostMapping("/transactional/orders")
		@Idempotent
		@Transactional
		public ResponseEntity<Map<String, Object>> placeOrderTransactionally(@RequestBody Order order,
				HttpServletRequest request) {
			ResponseEntity<Map<String, Object>> response = place(order, request);
			if (order.amount() == 42) {
				// Work that went wrong without an exception reaching the filter.
				TransactionAspectSupport.currentTransactionStatus().setRollbackOnly();
			}
			return response;
		}

		@PostMapping("/orphans")
		@Idempotent
		ResponseEntity<String> insertOrphan(@RequestBody Order order) {
			this.gates.executions.incrementAndGet();
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
			// Violates a deferred foreign key: the statement succeeds, the commit fails.
			this.jdbc.update("INSERT INTO child (id, parent_id) VALUES (?, 999)", order.amount());
			return ResponseEntity.status(HttpStatus.CREATED).body("created");
		}

		@PostMapping("/large")
		@Idempotent
		String large(@RequestBody Order order) {
			this.gates.executions.incrementAndGet();
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
			return "x".repeat(order.amount());
		}

		@PostMapping("/notes")
		@Idempotent
		ResponseEntity<String> note(@RequestBody String text) {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.status(HttpStatus.CREATED).body("noted " + text.length() + " characters");
		}

		@PostMapping("/uploads")
		@Idempotent
		ResponseEntity<String> upload(@RequestParam("file") MultipartFile file, @RequestParam String title) {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.status(HttpStatus.CREATED).body(title + ": " + file.getSize() + " bytes");
		}

		private ResponseEntity<Map<String, Object>> place(Order order, HttpServletRequest request) {
			this.gates.executions.incrementAndGet();
			Principal principal = request.getUserPrincipal();
			@Nullable String user = (principal != null) ? principal.getName() : null;
			Long id = this.jdbc.queryForObject(
					"INSERT INTO orders (item, amount, principal) VALUES (?, ?, ?) RETURNING id", Long.class,
					order.item(), order.amount(), user);
			if (request.getHeader("X-Block") != null) {
				Integer pid = this.jdbc.queryForObject((DatabaseType.of(this.jdbc) == DatabaseType.MARIADB)
						? "SELECT CONNECTION_ID()" : "SELECT pg_backend_pid()", Integer.class);
				this.gates.backendPid = (pid != null) ? pid : 0;
				this.gates.pass();
			}
			if (order.amount() < 0) {
				throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "The amount must not be negative");
			}
			if (this.gates.failNext.getAndSet(false)) {
				throw new IllegalStateException("Simulated failure after the write");
			}
			if (order.amount() >= 400 && order.amount() < 600) {
				return ResponseEntity.status(order.amount()).body(Map.of("error", "simulated", "id", id));
			}
			Map<String, Object> body = new LinkedHashMap<>();
			body.put("id", id);
			body.put("item", order.item());
			body.put("amount", order.amount());
			body.put("principal", user);
			return ResponseEntity.created(URI.create("/orders/" + id)).eTag("\"v" + id + "\"").body(body);
		}

	}

	/**
	 * A handler whose arguments Spring MVC can refuse before it runs: a required
	 * parameter, a JSON body and a validator of its own.
	 */
	@RestController
	static class StrictOrdersController {

		private final JdbcTemplate jdbc;

		private final Gates gates;

		StrictOrdersController(JdbcTemplate jdbc, Gates gates) {
			this.jdbc = jdbc;
			this.gates = gates;
		}

		@InitBinder("order")
		void validateOrders(WebDataBinder binder) {
			binder.addValidators(new Validator() {

				@Override
				public boolean supports(Class<?> type) {
					return Order.class.isAssignableFrom(type);
				}

				@Override
				public void validate(Object target, Errors errors) {
					if (((Order) target).amount() <= 0) {
						errors.rejectValue("amount", "positive", "The amount must be positive");
					}
				}

			});
		}

		@PostMapping("/strict/orders")
		@Idempotent
		ResponseEntity<String> place(@RequestParam String channel, @Validated @RequestBody Order order) {
			this.gates.executions.incrementAndGet();
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
			return ResponseEntity.status(HttpStatus.CREATED).body(channel + " order of " + order.amount());
		}

		@PostMapping("/strict/orders/{id}/pay")
		@Idempotent
		ResponseEntity<String> pay(@PathVariable long id, @RequestParam String channel, @RequestBody Order order) {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.ok(channel + " payment of order " + id);
		}

	}

	/**
	 * Handlers declared loosely enough to pass the startup check, that return an
	 * asynchronous result at run time.
	 */
	@RestController
	static class AsyncController {

		private final JdbcTemplate jdbc;

		private final Gates gates;

		AsyncController(JdbcTemplate jdbc, Gates gates) {
			this.jdbc = jdbc;
			this.gates = gates;
		}

		@PostMapping("/async/future")
		@Idempotent
		Object future(@RequestBody Order order) {
			return work(order);
		}

		@PostMapping("/async/single/future")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		Object futureInOneTransaction(@RequestBody Order order) {
			return work(order);
		}

		private CompletableFuture<String> work(Order order) {
			this.gates.executions.incrementAndGet();
			return CompletableFuture.supplyAsync(() -> {
				this.gates.pass();
				this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
				this.gates.asyncRuns.incrementAndGet();
				return "late";
			});
		}

		@PostMapping("/async/callable")
		@Idempotent
		Object callable(@RequestBody Order order) {
			this.gates.executions.incrementAndGet();
			return (Callable<String>) () -> {
				this.gates.asyncRuns.incrementAndGet();
				this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
				return "late";
			};
		}

		@PostMapping("/async/entity")
		@Idempotent
		ResponseEntity<?> entity(@RequestBody Order order) {
			this.gates.executions.incrementAndGet();
			return ResponseEntity.status(HttpStatus.CREATED).body(Map.of("item", order.item()));
		}

	}

}
