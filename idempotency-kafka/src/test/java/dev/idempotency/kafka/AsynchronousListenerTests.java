package dev.idempotency.kafka;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

import dev.idempotency.kafka.ListenerTestConfiguration.Calls;
import dev.idempotency.kafka.ListenerTestConfiguration.DeliveryAttempts;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;
import org.springframework.transaction.annotation.EnableTransactionManagement;

import static dev.idempotency.kafka.KafkaTestSupport.newId;
import static dev.idempotency.kafka.KafkaTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Listeners whose work would complete after they return, and so after the transaction
 * that marks their event: refused.
 */
@PostgresTest
@KafkaTest
@SpringJUnitConfig(ListenerTestConfiguration.class)
@DirtiesContext
class AsynchronousListenerTests {

	@Autowired
	private KafkaTemplate<String, String> kafka;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Calls calls;

	@Autowired
	private DeliveryAttempts attempts;

	@Value("${spring.kafka.bootstrap-servers}")
	private String bootstrapServers;

	@Test
	void listenerReturningACompletableFutureFailsTheStartup() {
		assertStartupFails(FutureListener.class, "it is asynchronous (CompletableFuture)");
	}

	@Test
	void listenerReturningAMonoFailsTheStartup() {
		assertStartupFails(MonoListener.class, "it is asynchronous (Mono)");
	}

	@Test
	void listenerDeclaredObjectThatReturnsAFutureLeavesTheEventUnmarkedAndItGoesToTheDeadLetterTopicAtOnce()
			throws Exception {
		String eventId = newId("loose");
		String payload = newId("loose-payload");
		send(this.kafka, "loose-events", eventId, payload);
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "loose-events-dlt",
				payload);
		assertThat(new String(dead.headers().lastHeader(KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN).value(),
				StandardCharsets.UTF_8))
			.isEqualTo(AsynchronousResultException.class.getName());
		assertThat(this.calls.until("loose", eventId)).containsExactly(eventId);
		// Retrying would start the asynchronous work again.
		assertThat(this.attempts.of(payload)).containsExactly(1);
		assertThat(this.jdbc.queryForObject(
				"SELECT count(*) FROM processed_event WHERE consumer_group = 'loose-group' AND event_id = ?",
				Integer.class, eventId))
			.isZero();
	}

	private static void assertStartupFails(Class<?> listener, String message) {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
			context.register(ProxyConfiguration.class, listener);
			assertThatException().isThrownBy(context::refresh)
				.havingRootCause()
				.withMessageContaining("cannot be made idempotent: " + message)
				.withMessageContaining("would run after the transaction that marks the event processed");
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EnableTransactionManagement(proxyTargetClass = true)
	static class ProxyConfiguration {

		@Bean
		@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
		static IdempotentListenerAdvisor idempotentListenerAdvisor() {
			return new IdempotentListenerAdvisor();
		}

	}

	static class FutureListener {

		@IdempotentListener
		CompletableFuture<Void> on(ConsumerRecord<String, String> record) {
			return CompletableFuture.completedFuture(null);
		}

	}

	static class MonoListener {

		@IdempotentListener
		Mono<Void> on(ConsumerRecord<String, String> record) {
			return Mono.empty();
		}

	}

}
