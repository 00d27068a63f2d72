package dev.idempotency.benchmarks;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import com.zaxxer.hikari.HikariDataSource;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * What every listener of {@link ListenerBenchmark} shares, declared once in each of its
 * contexts: a small pool on the run's schema, its transaction manager, and consumers of
 * String records. No Spring Boot: nothing here reaches the other benchmarks.
 */
@Configuration(proxyBeanMethods = false)
class ListenerInfrastructure {

	static final String URL = "benchmark.listener.url";

	static final String USERNAME = "benchmark.listener.username";

	static final String PASSWORD = "benchmark.listener.password";

	static final String BOOTSTRAP_SERVERS = "benchmark.listener.bootstrap-servers";

	static final String TOPIC_PREFIX = "benchmark.listener.topic-prefix";

	/**
	 * The business write of every listener. No unique key, so that a listener that
	 * handled a record twice shows in the row count instead of failing.
	 */
	static final String EFFECT_TABLE = """
			CREATE TABLE IF NOT EXISTS effect (listener text NOT NULL, event_id text NOT NULL, payload text)
			""";

	static final String EFFECT_INSERT = "INSERT INTO effect (listener, event_id, payload) VALUES (?, ?, ?)";

	@Bean(destroyMethod = "close")
	HikariDataSource dataSource(Environment environment) {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(environment.getRequiredProperty(URL));
		dataSource.setUsername(environment.getRequiredProperty(USERNAME));
		dataSource.setPassword(environment.getProperty(PASSWORD));
		// Tells the benchmark's sessions apart in pg_stat_activity when profiling.
		dataSource.addDataSourceProperty("ApplicationName", "idempotency-listener-benchmark");
		// One listener runs at a time, with at most MAX_CONSUMERS consumers.
		dataSource.setMaximumPoolSize(ListenerBenchmark.MAX_CONSUMERS + 1);
		return dataSource;
	}

	@Bean
	JdbcTemplate jdbcTemplate(HikariDataSource dataSource) {
		return new JdbcTemplate(dataSource);
	}

	@Bean
	DataSourceTransactionManager transactionManager(HikariDataSource dataSource) {
		return new DataSourceTransactionManager(dataSource);
	}

	@Bean
	ConsumerFactory<String, String> consumerFactory(Environment environment) {
		Map<String, Object> properties = new HashMap<>();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, environment.getRequiredProperty(BOOTSTRAP_SERVERS));
		properties.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
		properties.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
		properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
		return new DefaultKafkaConsumerFactory<>(properties);
	}

	@Bean
	Handled handled() {
		return new Handled();
	}

	/**
	 * Give a container the settings every listener of the benchmark runs with.
	 */
	static void configure(AbstractMessageListenerContainer<String, String> container, Handled handled) {
		// Short, so that a pause or a stop takes effect at once; a poll with records
		// waiting returns at once whatever its timeout.
		container.getContainerProperties().setPollTimeout(100);
		container.setRecordInterceptor(handled);
		container.setBatchInterceptor(handled);
	}

	/**
	 * Counts the records a container has handled, once its listener has returned (after
	 * the listener's commit, for every listener alike; duplicates included).
	 */
	static class Handled implements RecordInterceptor<String, String>, BatchInterceptor<String, String> {

		private volatile CountDownLatch latch = new CountDownLatch(0);

		void expect(int records) {
			this.latch = new CountDownLatch(records);
		}

		CountDownLatch latch() {
			return this.latch;
		}

		@Override
		public @Nullable ConsumerRecord<String, String> intercept(ConsumerRecord<String, String> record,
				Consumer<String, String> consumer) {
			return record;
		}

		@Override
		public void success(ConsumerRecord<String, String> record, Consumer<String, String> consumer) {
			this.latch.countDown();
		}

		@Override
		public @Nullable ConsumerRecords<String, String> intercept(ConsumerRecords<String, String> records,
				Consumer<String, String> consumer) {
			return records;
		}

		@Override
		public void success(ConsumerRecords<String, String> records, Consumer<String, String> consumer) {
			CountDownLatch latch = this.latch;
			for (int i = 0; i < records.count(); i++) {
				latch.countDown();
			}
		}

	}

}
