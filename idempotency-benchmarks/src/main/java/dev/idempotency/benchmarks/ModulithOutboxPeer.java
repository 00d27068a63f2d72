package dev.idempotency.benchmarks;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;

import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Spring Modulith's event publication registry on JDBC with Kafka externalization: a
 * Spring Boot application of its own in which the business transaction publishes
 * {@link PeerEvent}s, which are {@code @Externalized}. The registry writes a publication
 * per event in the transaction; after the commit the externalizer sends each event on the
 * application's task executor and the registry marks the publication completed when Kafka
 * acknowledged it.
 * <p>
 * Configured as the reference documentation describes: the JDBC schema initialized by
 * Modulith, completion mode {@code delete} (so that completed publications need no
 * purging job), JSON serialization of the events (the default), Boot's defaults for the
 * task executor and the Kafka producer.
 */
final class ModulithOutboxPeer implements OutboxPeer {

	/** The topic of {@link PeerEvent}'s {@code @Externalized} annotation. */
	static final String TOPIC = "bench-peer-modulith";

	private final TestSchema schema;

	private final ConfigurableApplicationContext context;

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	ModulithOutboxPeer(EmbeddedKafkaBroker broker, int connections) {
		this.schema = TestDatabase.get().createSchema("peer_modulith");
		SpringApplication application = new SpringApplication(Application.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.setBannerMode(Banner.Mode.OFF);
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put(PeerAutoConfigurationFilter.PEER_PROPERTY, "modulith");
		OutboxPeers.dataSourceProperties(this.schema, connections, properties);
		properties.put("spring.kafka.bootstrap-servers", broker.getBrokersAsString());
		properties.put("spring.modulith.events.jdbc.schema-initialization.enabled", true);
		properties.put("spring.modulith.events.completion-mode", "delete");
		application.setDefaultProperties(properties);
		this.context = application.run();
		this.jdbc = this.context.getBean(JdbcTemplate.class);
		this.jdbc.execute(BUSINESS_TABLE);
		this.transactions = new TransactionTemplate(this.context.getBean(PlatformTransactionManager.class));
	}

	@Override
	public String name() {
		return "Spring Modulith 2.0.3 (JDBC registry + Kafka externalization)";
	}

	@Override
	public String topic() {
		return TOPIC;
	}

	@Override
	public void append(List<PeerEvent> events) {
		this.transactions.executeWithoutResult((status) -> {
			OutboxPeer.insertOrders(this.jdbc, events);
			events.forEach(this.context::publishEvent);
		});
	}

	@Override
	public long unfinished() {
		Long count = this.jdbc.queryForObject("SELECT count(*) FROM event_publication WHERE completion_date IS NULL",
				Long.class);
		return (count != null) ? count : 0;
	}

	@Override
	public void reset() {
		this.jdbc.execute("TRUNCATE peer_order, event_publication");
	}

	@Override
	public void close() {
		this.context.close();
		this.schema.close();
	}

	/**
	 * The application: Boot's auto-configuration and Modulith's, in this package so that
	 * {@link PeerEvent} is among the events Modulith externalizes.
	 */
	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class Application {

	}

}
