package dev.idempotency.autoconfigure.web;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.springframework.boot.web.error.ErrorPage;
import org.springframework.boot.web.error.ErrorPageRegistrar;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.io.InputStreamResource;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.ModelAndView;

/**
 * The handlers of {@link IdempotentHttpMatrixTests}: one {@code @Idempotent} handler per
 * claim mode and return type under {@code /matrix/{mode}/{return type}}, each producing
 * the outcome that the {@code X-Outcome} header names, and unannotated handlers that
 * reach them by a forward, an asynchronous dispatch and an error page. Every execution
 * writes an order named after the case ({@code X-Case}) and waits at the case's gate.
 */
@Configuration(proxyBeanMethods = false)
@Import(MatrixEndpoints.MatrixController.class)
class MatrixEndpoints {

	@Bean
	Cases matrixCases() {
		return new Cases();
	}

	@Bean
	ErrorPageRegistrar matrixErrorPage() {
		return (registry) -> registry.addErrorPages(new ErrorPage(ToTheErrorPage.class, "/matrix-error-page"));
	}

	/**
	 * What a handler ends with.
	 */
	enum Outcome {

		/** 201, committed with its writes and stored. */
		CREATED,

		/** A returned 410, committed with its writes and stored. */
		RETURNED_CLIENT_ERROR,

		/** A 402 that an {@code @ExceptionHandler} decided: rolled back, stored. */
		EXCEPTION_CLIENT_ERROR,

		/** A returned 503: rolled back, the key released. */
		SERVER_ERROR,

		/** An exception nothing resolves: a 500, rolled back, the key released. */
		THROWN,

		/** 201 from the handler, but the commit fails: a 500, the key released. */
		COMMIT_FAILURE

	}

	/**
	 * The executions and the gate of each case.
	 */
	static final class Cases {

		private final Map<String, Case> cases = new ConcurrentHashMap<>();

		Case of(String name) {
			return this.cases.computeIfAbsent(name, (key) -> new Case());
		}

	}

	static final class Case {

		final AtomicInteger executions = new AtomicInteger();

		final AtomicInteger entered = new AtomicInteger();

		final CountDownLatch open = new CountDownLatch(1);

		int pass() {
			int execution = this.executions.incrementAndGet();
			this.entered.incrementAndGet();
			try {
				if (!this.open.await(60, TimeUnit.SECONDS)) {
					throw new IllegalStateException("The test never opened the gate");
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
			return execution;
		}

	}

	static final class ToTheErrorPage extends RuntimeException {

	}

	static final class Declined extends RuntimeException {

	}

	@RestController
	static class MatrixController {

		private final JdbcTemplate jdbc;

		private final Cases cases;

		MatrixController(JdbcTemplate jdbc, Cases cases) {
			this.jdbc = jdbc;
			this.cases = cases;
		}

		@RequestMapping(path = "/matrix/two-phase/value", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		String twoPhaseValue(@RequestHeader("X-Case") String name, @RequestHeader("X-Outcome") Outcome outcome,
				HttpServletResponse response) {
			return value(name, outcome, response);
		}

		@RequestMapping(path = "/matrix/single/value", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		String singleValue(@RequestHeader("X-Case") String name, @RequestHeader("X-Outcome") Outcome outcome,
				HttpServletResponse response) {
			return value(name, outcome, response);
		}

		@RequestMapping(path = "/matrix/two-phase/entity", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<String> twoPhaseEntity(@RequestHeader("X-Case") String name,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return entity(name, outcome);
		}

		@RequestMapping(path = "/matrix/single/entity", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		ResponseEntity<String> singleEntity(@RequestHeader("X-Case") String name,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return entity(name, outcome);
		}

		@RequestMapping(path = "/matrix/two-phase/writer", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		void twoPhaseWriter(@RequestHeader("X-Case") String name, @RequestHeader("X-Outcome") Outcome outcome,
				HttpServletResponse response) throws IOException {
			writer(name, outcome, response);
		}

		@RequestMapping(path = "/matrix/single/writer", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		void singleWriter(@RequestHeader("X-Case") String name, @RequestHeader("X-Outcome") Outcome outcome,
				HttpServletResponse response) throws IOException {
			writer(name, outcome, response);
		}

		@RequestMapping(path = "/matrix/two-phase/stream", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<InputStreamResource> twoPhaseStream(@RequestHeader("X-Case") String name,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return stream(name, outcome);
		}

		@RequestMapping(path = "/matrix/single/stream", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		ResponseEntity<InputStreamResource> singleStream(@RequestHeader("X-Case") String name,
				@RequestHeader("X-Outcome") Outcome outcome) {
			return stream(name, outcome);
		}

		@RequestMapping(path = "/matrix/two-phase/future", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		Object twoPhaseFuture(@RequestHeader("X-Case") String name) {
			return future(name);
		}

		@RequestMapping(path = "/matrix/single/future", method = { RequestMethod.POST, RequestMethod.GET })
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION)
		Object singleFuture(@RequestHeader("X-Case") String name) {
			return future(name);
		}

		@PostMapping("/matrix-forward/{mode}/{type}")
		ModelAndView forward(@PathVariable String mode, @PathVariable String type) {
			return new ModelAndView("forward:/matrix/" + mode + "/" + type);
		}

		@PostMapping("/matrix-async/{mode}/{type}")
		void dispatch(@PathVariable String mode, @PathVariable String type, HttpServletRequest request) {
			request.startAsync().dispatch("/matrix/" + mode + "/" + type);
		}

		@PostMapping("/matrix-error/{mode}/{type}")
		void fail() {
			throw new ToTheErrorPage();
		}

		@RequestMapping("/matrix-error-page")
		ModelAndView errorPage(HttpServletRequest request) {
			String failed = (String) request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI);
			return new ModelAndView("forward:" + failed.replace("/matrix-error/", "/matrix/"));
		}

		@ExceptionHandler
		ResponseEntity<String> declined(Declined ex) {
			return ResponseEntity.status(HttpStatus.PAYMENT_REQUIRED).body("declined");
		}

		private String value(String name, Outcome outcome, HttpServletResponse response) {
			int execution = run(name, outcome);
			response.setStatus(status(outcome));
			return body(name, execution);
		}

		private ResponseEntity<String> entity(String name, Outcome outcome) {
			int execution = run(name, outcome);
			return ResponseEntity.status(status(outcome)).body(body(name, execution));
		}

		/**
		 * A body written in chunks, each flushed as a handler that streams its output
		 * does.
		 */
		private void writer(String name, Outcome outcome, HttpServletResponse response) throws IOException {
			int execution = run(name, outcome);
			response.setStatus(status(outcome));
			response.setContentType(MediaType.TEXT_PLAIN_VALUE);
			ServletOutputStream out = response.getOutputStream();
			for (String chunk : body(name, execution).split(" ")) {
				out.write((chunk + " ").getBytes(StandardCharsets.UTF_8));
				response.flushBuffer();
			}
		}

		private ResponseEntity<InputStreamResource> stream(String name, Outcome outcome) {
			int execution = run(name, outcome);
			byte[] body = body(name, execution).getBytes(StandardCharsets.UTF_8);
			return ResponseEntity.status(status(outcome))
				.contentType(MediaType.APPLICATION_OCTET_STREAM)
				.body(new InputStreamResource(new ByteArrayInputStream(body)));
		}

		private Object future(String name) {
			this.cases.of(name).pass();
			return CompletableFuture.completedFuture("later");
		}

		private int run(String name, Outcome outcome) {
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, 1)", name);
			int execution = this.cases.of(name).pass();
			switch (outcome) {
				case EXCEPTION_CLIENT_ERROR -> throw new Declined();
				case THROWN -> throw new IllegalStateException("Simulated failure of " + name);
				case COMMIT_FAILURE -> this.jdbc.update("INSERT INTO child (id, parent_id) VALUES (?, 999999)",
						ThreadLocalRandom.current().nextInt(1_000_000, Integer.MAX_VALUE));
				default -> {
				}
			}
			return execution;
		}

		private static int status(Outcome outcome) {
			return switch (outcome) {
				case RETURNED_CLIENT_ERROR -> 410;
				case SERVER_ERROR -> 503;
				default -> 201;
			};
		}

		private static String body(String name, int execution) {
			return "case " + name + " execution " + execution;
		}

	}

}
