package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.LazyConnectionDataSourceProxy;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A two-phase handler runs in a transaction that the library begins for it, and a
 * transaction holds a connection of the pool from its beginning: ten slow handlers hold a
 * pool of ten. With the application's {@code DataSource} wrapped in Spring's
 * {@link LazyConnectionDataSourceProxy}, as the documentation recommends for handlers
 * that are slow before they write, a handler holds a connection only from its first
 * statement, and an unrelated request is answered while ten such handlers are slow.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, IdempotentHttpLazyConnectionTests.LazyDataSource.class })
class IdempotentHttpLazyConnectionTests extends IdempotentHttpTestSupport {

	private static final int POOL_SIZE = 10;

	@Autowired
	private SlowCharges charges;

	@Test
	void slowTwoPhaseHandlersHoldNoConnectionBeforeTheirFirstStatement() throws Exception {
		this.charges.expect();
		List<Future<HttpResponse<byte[]>>> slow = new ArrayList<>();
		for (int i = 0; i < POOL_SIZE; i++) {
			String key = UUID.randomUUID().toString();
			slow.add(this.executor.submit(() -> this.http.post("/slow/charges", "{}", "Idempotency-Key", key)));
		}
		await().atMost(Duration.ofSeconds(30)).until(() -> this.charges.slow.get() == POOL_SIZE);
		HttpResponse<byte[]> unrelated = this.executor.submit(() -> this.http.get("/accounts/none"))
			.get(60, TimeUnit.SECONDS);
		assertThat(unrelated.statusCode()).isEqualTo(200);
		assertThat(slow).as("the slow handlers, still running").noneMatch(Future::isDone);
		this.charges.open.countDown();
		for (Future<HttpResponse<byte[]>> charge : slow) {
			assertThat(charge.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		}
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = 'slow-charge'", Integer.class))
			.isEqualTo(POOL_SIZE);
	}

	@Configuration(proxyBeanMethods = false)
	@Import(SlowCharges.class)
	static class LazyDataSource {

		@Bean
		DataSource dataSource(JdbcConnectionDetails connection) {
			HikariDataSource pool = new HikariDataSource();
			pool.setJdbcUrl(connection.getJdbcUrl());
			pool.setUsername(connection.getUsername());
			pool.setPassword(connection.getPassword());
			pool.setMaximumPoolSize(POOL_SIZE);
			pool.setConnectionTimeout(45_000);
			return new LazyConnectionDataSourceProxy(pool);
		}

	}

	/**
	 * Charges that call a slow payment provider before they write the order.
	 */
	@RestController
	static class SlowCharges {

		private final JdbcTemplate jdbc;

		final AtomicInteger slow = new AtomicInteger();

		volatile CountDownLatch open = new CountDownLatch(0);

		SlowCharges(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		void expect() {
			this.slow.set(0);
			this.open = new CountDownLatch(1);
		}

		@PostMapping("/slow/charges")
		@Idempotent(mode = ClaimMode.TWO_PHASE)
		ResponseEntity<String> charge(@RequestHeader("Idempotency-Key") String key) throws InterruptedException {
			this.slow.incrementAndGet();
			if (!this.open.await(60, TimeUnit.SECONDS)) {
				throw new IllegalStateException("The test never let the provider answer");
			}
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES ('slow-charge', 1)");
			return ResponseEntity.status(HttpStatus.CREATED).body("charged");
		}

	}

}
