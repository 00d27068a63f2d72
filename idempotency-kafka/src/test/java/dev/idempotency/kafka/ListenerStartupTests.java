package dev.idempotency.kafka;

import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.transaction.annotation.EnableTransactionManagement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;
import static org.assertj.core.api.Assertions.assertThatNoException;

/**
 * What fails the startup, and what is said at startup: listeners that do not fit their
 * container, that reply, or whose transaction manager is not that of the processed
 * events' {@code DataSource}. No container starts: no broker and no database are needed.
 */
class ListenerStartupTests {

	@Test
	void theOnlyTransactionManagerBeingOfAnotherDataSourceFailsTheStartupNamingTheListenerAndTheFix() {
		assertStartupFails(List.of(StoreOnItsOwnDataSource.class, OtherTransactionManager.class, RecordListener.class),
				"@IdempotentListener method RecordListener.on must run in a transaction of the DataSource of the "
						+ "processed events, and no transaction manager manages it (found: otherTransactionManager "
						+ "(DataSourceTransactionManager))",
				"idempotency.kafka.transaction-manager", "@IdempotentListener(transactionManager = ");
	}

	@Test
	void aNamedTransactionManagerOfAnotherDataSourceFailsTheStartup() {
		assertStartupFails(
				List.of(StoreOnItsOwnDataSource.class, StoreTransactionManager.class, OtherTransactionManager.class,
						NamingListener.class),
				"Transaction manager otherTransactionManager (DataSourceTransactionManager) does not manage the "
						+ "DataSource of the processed events");
	}

	@Test
	void theTransactionManagerOfTheStoresDataSourceIsFoundBesideOneOfAnotherDataSource() {
		assertThatNoException().isThrownBy(() -> start(List.of(StoreOnItsOwnDataSource.class,
				StoreTransactionManager.class, OtherTransactionManager.class, RecordListener.class))
			.close());
	}

	@Test
	void aListenerThatRepliesFailsTheStartup() {
		assertStartupFails(List.of(Store.class, ReplyingListener.class),
				"cannot be made idempotent: it replies (@SendTo)", "through the outbox");
	}

	@Test
	void aBatchSignatureOnARecordContainerFailsTheStartup() {
		assertStartupFails(List.of(Store.class, RecordsOnRecordContainer.class),
				"RecordsOnRecordContainer.on cannot be made idempotent: it takes a batch",
				"its container delivers one record at a time", "spring.kafka.listener.type=batch");
	}

	@Test
	void aBatchAttributeWithAPlaceholderFailsTheStartupSayingSpringKafkaReadsItAsFalse() {
		assertStartupFails(List.of(Store.class, PlaceholderBatch.class),
				"spring-kafka reads a @KafkaListener batch attribute with a placeholder as false");
	}

	@Test
	void convertedBatchHeadersOnARecordContainerFailTheStartup() {
		assertStartupFails(List.of(Store.class, ConvertedHeadersOnRecordContainer.class), "it takes a batch");
	}

	@Test
	void aBatchOfPayloadsInAKafkaTransactionalContainerWithoutTheRecordsPositionsFailsTheStartup() {
		assertStartupFails(List.of(Store.class, TransactionalBatchFactory.class, PayloadsWithoutPositions.class),
				"is recovered by the library, which needs the record's position",
				"@Header(KafkaHeaders.RECEIVED_TOPIC) List<String>");
	}

	@Test
	void aClassLevelBatchListenerWhoseHandlerTakesRecordsFailsTheStartup() {
		assertStartupFails(List.of(Store.class, ClassLevelRecords.class),
				"a class-level @KafkaListener hands a batch to its @KafkaHandler as a list of converted payloads");
	}

	@Test
	void listenersThatShareAConsumerGroupAreWarnedOfAtStartup() {
		Logger logger = (Logger) LoggerFactory.getLogger(IdempotentListenerInterceptor.class);
		ListAppender<ILoggingEvent> appender = new ListAppender<>();
		appender.start();
		logger.addAppender(appender);
		try {
			start(List.of(Store.class, SharedGroupListeners.class)).close();
		}
		finally {
			logger.detachAppender(appender);
		}
		assertThat(appender.list).filteredOn((event) -> event.getLevel() == Level.WARN)
			.extracting(ILoggingEvent::getFormattedMessage)
			.singleElement()
			.asString()
			.contains("SharedGroupListeners.onOrder, SharedGroupListeners.onRefund")
			.contains("'billing'")
			.contains("@IdempotentListener(consumerGroup = ");
	}

	private static void assertStartupFails(List<Class<?>> configurations, String... messages) {
		assertThatException().isThrownBy(() -> start(configurations).close())
			.satisfies(
					(ex) -> assertThat(NestedExceptionUtils.getMostSpecificCause(ex).getMessage()).contains(messages));
	}

	private static AnnotationConfigApplicationContext start(List<Class<?>> configurations) {
		AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
		context.register(Infrastructure.class);
		configurations.forEach(context::register);
		try {
			context.refresh();
		}
		catch (RuntimeException ex) {
			context.close();
			throw ex;
		}
		return context;
	}

	@Configuration(proxyBeanMethods = false)
	@EnableKafka
	@EnableTransactionManagement(proxyTargetClass = true)
	static class Infrastructure {

		@Bean
		@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
		static IdempotentListenerAdvisor idempotentListenerAdvisor() {
			return new IdempotentListenerAdvisor();
		}

		@Bean
		ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory() {
			ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
			factory.setConsumerFactory(new DefaultKafkaConsumerFactory<>(Map.of("bootstrap.servers", "localhost:1")));
			factory.setAutoStartup(false);
			return factory;
		}

	}

	/**
	 * A store on a DataSource with its transaction manager.
	 */
	@Configuration(proxyBeanMethods = false)
	static class Store {

		@Bean
		DataSource dataSource() {
			return new SimpleDriverDataSource();
		}

		@Bean
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		ProcessedEventStore processedEventStore(DataSource dataSource) {
			return new JdbcProcessedEventStore(new JdbcTemplate(dataSource));
		}

	}

	/**
	 * A store on a DataSource of its own, without a transaction manager.
	 */
	@Configuration(proxyBeanMethods = false)
	static class StoreOnItsOwnDataSource {

		@Bean
		DataSource storeDataSource() {
			return new SimpleDriverDataSource();
		}

		@Bean
		ProcessedEventStore processedEventStore(@Qualifier("storeDataSource") DataSource storeDataSource) {
			return new JdbcProcessedEventStore(new JdbcTemplate(storeDataSource));
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class StoreTransactionManager {

		@Bean
		DataSourceTransactionManager storeTransactionManager(@Qualifier("storeDataSource") DataSource storeDataSource) {
			return new DataSourceTransactionManager(storeDataSource);
		}

	}

	/**
	 * The transaction manager of the application's other database.
	 */
	@Configuration(proxyBeanMethods = false)
	static class OtherTransactionManager {

		@Bean
		DataSourceTransactionManager otherTransactionManager() {
			return new DataSourceTransactionManager(new SimpleDriverDataSource());
		}

	}

	/**
	 * A batch container factory in Kafka transactions.
	 */
	@Configuration(proxyBeanMethods = false)
	static class TransactionalBatchFactory {

		@Bean
		ConcurrentKafkaListenerContainerFactory<String, String> transactionalBatchFactory() {
			DefaultKafkaProducerFactory<String, String> producers = new DefaultKafkaProducerFactory<>(
					Map.of("bootstrap.servers", "localhost:1"));
			producers.setTransactionIdPrefix("startup-");
			ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
			factory.setConsumerFactory(new DefaultKafkaConsumerFactory<>(Map.of("bootstrap.servers", "localhost:1")));
			factory.setBatchListener(true);
			factory.setAutoStartup(false);
			factory.getContainerProperties().setKafkaAwareTransactionManager(new KafkaTransactionManager<>(producers));
			return factory;
		}

	}

	static class PayloadsWithoutPositions {

		@KafkaListener(topics = "events", groupId = "payloads", containerFactory = "transactionalBatchFactory")
		@IdempotentListener
		void on(List<String> payloads,
				@Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers) {
		}

	}

	@KafkaListener(topics = "events", groupId = "class-level", batch = "true")
	static class ClassLevelRecords {

		@KafkaHandler
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records) {
		}

	}

	static class RecordListener {

		@KafkaListener(topics = "events", groupId = "records")
		@IdempotentListener
		void on(ConsumerRecord<String, String> record) {
		}

	}

	static class NamingListener {

		@KafkaListener(topics = "events", groupId = "named")
		@IdempotentListener(transactionManager = "otherTransactionManager")
		void on(ConsumerRecord<String, String> record) {
		}

	}

	static class ReplyingListener {

		@KafkaListener(topics = "requests", groupId = "replies")
		@SendTo("replies")
		@IdempotentListener
		String on(ConsumerRecord<String, String> record) {
			return "reply";
		}

	}

	static class RecordsOnRecordContainer {

		@KafkaListener(topics = "events", groupId = "records")
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records) {
		}

	}

	static class PlaceholderBatch {

		@KafkaListener(topics = "events", groupId = "records", batch = "${listener.batch:true}")
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records) {
		}

	}

	static class ConvertedHeadersOnRecordContainer {

		@KafkaListener(topics = "events", groupId = "records")
		@IdempotentListener
		void on(List<String> payloads,
				@Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers) {
		}

	}

	static class SharedGroupListeners {

		@KafkaListener(topics = "orders", groupId = "billing")
		@IdempotentListener
		void onOrder(String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
		}

		@KafkaListener(topics = "refunds", groupId = "billing")
		@IdempotentListener
		void onRefund(String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
		}

		@KafkaListener(topics = "refunds", groupId = "billing")
		@IdempotentListener(consumerGroup = "refunds")
		void onRefundOnItsOwn(String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
		}

	}

}
