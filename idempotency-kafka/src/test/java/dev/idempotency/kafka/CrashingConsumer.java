package dev.idempotency.kafka;

import java.util.Map;
import java.util.concurrent.CountDownLatch;

import javax.sql.DataSource;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import org.apache.kafka.clients.consumer.ConsumerConfig;

import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A consumer process for the crash test, run in a child JVM. Its listener commits its
 * database transaction, prints {@value #COMMITTED} and the event id, and then never
 * returns, so the container never commits the offset: the parent kills it at exactly that
 * point.
 */
public final class CrashingConsumer {

	static final String TOPIC = "crash-events";

	static final String GROUP = "crash-group";

	static final String COMMITTED = "COMMITTED ";

	private CrashingConsumer() {
	}

	/**
	 * Run the consumer until killed.
	 * @param args the JDBC URL, user name, password and Kafka bootstrap servers
	 * @throws InterruptedException never in practice
	 */
	public static void main(String[] args) throws InterruptedException {
		AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
		context.getEnvironment()
			.getPropertySources()
			.addFirst(new MapPropertySource("crash",
					Map.of("spring.datasource.url", args[0], "spring.datasource.username", args[1],
							"spring.datasource.password", (args.length > 3) ? args[2] : "",
							"spring.kafka.bootstrap-servers", args[args.length - 1])));
		context.register(ChildConfiguration.class);
		context.refresh();
		new CountDownLatch(1).await();
	}

	@Configuration(proxyBeanMethods = false)
	@EnableKafka
	@EnableTransactionManagement(proxyTargetClass = true)
	static class ChildConfiguration {

		@Bean
		DataSource dataSource(Environment environment) {
			// The driver of the URL, PostgreSQL's or MariaDB's.
			return new DriverManagerDataSource(environment.getRequiredProperty("spring.datasource.url"),
					environment.getRequiredProperty("spring.datasource.username"),
					environment.getProperty("spring.datasource.password"));
		}

		@Bean
		JdbcTemplate jdbcTemplate(DataSource dataSource) {
			return new JdbcTemplate(dataSource);
		}

		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		ProcessedEventStore processedEventStore(JdbcTemplate jdbcTemplate) {
			return new JdbcProcessedEventStore(jdbcTemplate);
		}

		@Bean
		@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
		static IdempotentListenerAdvisor idempotentListenerAdvisor() {
			return new IdempotentListenerAdvisor();
		}

		@Bean
		ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory(Environment environment) {
			Map<String, Object> properties = ListenerTestConfiguration
				.consumerProperties(environment.getRequiredProperty("spring.kafka.bootstrap-servers"));
			// The parent's consumer joins the group after this one is killed: let the
			// broker notice the death quickly.
			properties.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
			properties.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
			ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
			factory.setConsumerFactory(new DefaultKafkaConsumerFactory<>(properties));
			return factory;
		}

		@Bean
		CrashingListener crashingListener(JdbcTemplate jdbcTemplate) {
			return new CrashingListener(jdbcTemplate);
		}

	}

	static class CrashingListener {

		private final JdbcTemplate jdbc;

		CrashingListener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@KafkaListener(topics = TOPIC, groupId = GROUP)
		@IdempotentListener
		void on(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES ('crash', ?, ?)", eventId,
					payload);
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

				@Override
				public void afterCommit() {
					System.out.println(COMMITTED + eventId);
					System.out.flush();
					try {
						new CountDownLatch(1).await();
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
				}

			});
		}

	}

}
