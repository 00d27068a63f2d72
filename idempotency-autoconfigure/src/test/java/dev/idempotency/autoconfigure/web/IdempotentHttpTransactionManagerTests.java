package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.transaction.KafkaTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * With Kafka transactions on ({@code spring.kafka.producer.transaction-id-prefix}),
 * Spring Boot's only transaction manager is Kafka's, under which a handler's writes would
 * commit on their own: the application refuses to start. With a transaction manager of
 * the key store's {@code DataSource} beside it, the handlers run in that one.
 */
@PostgresTest
@IdempotentHttpTest(
		classes = { WebTestApplication.class, IdempotentHttpTransactionManagerTests.JdbcTransactionManager.class },
		properties = { "spring.kafka.producer.transaction-id-prefix=tx-",
				"spring.kafka.bootstrap-servers=localhost:9" })
class IdempotentHttpTransactionManagerTests {

	@LocalServerPort
	private int port;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Gates gates;

	@Autowired
	private ApplicationContext context;

	private TestHttp http;

	@BeforeEach
	void setUp() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
	}

	@Test
	void aHandlerThatWritesThenThrowsLeavesNothingWhenKafkaTransactionsAreOn() {
		assertThat(this.context.getBeansOfType(KafkaTransactionManager.class)).isNotEmpty();
		String item = "kafka-tx-" + UUID.randomUUID();
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"" + item + "\",\"amount\":1}";
		for (int attempt = 0; attempt < 2; attempt++) {
			this.gates.failNext.set(true);
			HttpResponse<byte[]> failed = this.http.post("/orders", json, "Idempotency-Key", key);
			assertThat(failed.statusCode()).isEqualTo(500);
		}
		assertThat(this.gates.executions).hasValue(2);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, item))
			.isZero();
		assertThat(this.http.post("/orders", json, "Idempotency-Key", key).statusCode()).isEqualTo(201);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, item)).isOne();
	}

	@Test
	void withKafkasTransactionManagerAloneTheApplicationRefusesToStart(TestSchema schema) {
		SpringApplication application = new SpringApplication(WebTestApplication.class);
		application.setDefaultProperties(Map.of("server.port", "0", "spring.datasource.url", schema.getJdbcUrl(),
				"spring.datasource.username", schema.getUsername(), "spring.datasource.password", schema.getPassword(),
				"spring.kafka.producer.transaction-id-prefix", "tx-", "spring.kafka.bootstrap-servers", "localhost:9"));
		assertThatIllegalStateException().isThrownBy(application::run)
			.withMessageContaining("must run in a transaction of the DataSource of the idempotency keys")
			.withMessageContaining("kafkaTransactionManager (KafkaTransactionManager)")
			.withMessageContaining("idempotency.web.transaction-manager");
	}

	@TestConfiguration(proxyBeanMethods = false)
	static class JdbcTransactionManager {

		@Bean
		DataSourceTransactionManager jdbcTransactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

}
