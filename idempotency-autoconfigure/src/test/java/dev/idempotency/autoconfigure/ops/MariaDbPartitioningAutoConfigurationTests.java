package dev.idempotency.autoconfigure.ops;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code idempotency.jdbc.partitioning=daily} is refused on MariaDB with what to do.
 */
@MariaDbTest
class MariaDbPartitioningAutoConfigurationTests {

	private final ApplicationContextRunner contextRunner;

	MariaDbPartitioningAutoConfigurationTests(TestSchema schema) {
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyOperationsAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.cleanup.initial-delay=1h");
	}

	@Test
	void dailyPartitionsAreRefusedOnMariaDbWithWhatToDo() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.partitioning=daily").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("partitions PostgreSQL tables")
				.hasMessageContaining("MariaDB");
		});
		this.contextRunner.run((context) -> assertThat(context).hasNotFailed());
	}

}
