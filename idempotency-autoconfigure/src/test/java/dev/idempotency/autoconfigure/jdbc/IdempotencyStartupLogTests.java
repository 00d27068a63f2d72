package dev.idempotency.autoconfigure.jdbc;

import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
@ExtendWith(OutputCaptureExtension.class)
class IdempotencyStartupLogTests {

	private final ApplicationContextRunner contextRunner;

	IdempotencyStartupLogTests(TestSchema schema) {
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.outbox.relay.enabled=false");
	}

	@Test
	void oneInfoLineSaysWhichFeaturesAreOnAndHowTheTablesAreMade(CapturedOutput output) {
		String expected = "Idempotency: @Idempotent off, @IdempotentListener off, outbox on (relay off),"
				+ " outbound calls off, cleanup off; tables by the schema script (initialize-schema=always),"
				+ " checked at startup";
		this.contextRunner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(IdempotencyStartupLog.class).line()).isEqualTo(expected);
		});
		assertThat(output.getOut().split(java.util.regex.Pattern.quote(expected), -1)).hasSize(2);
		this.contextRunner.withPropertyValues("idempotency.jdbc.verify-schema=false")
			.run((context) -> assertThat(context.getBean(IdempotencyStartupLog.class).line())
				.endsWith("tables by the schema script (initialize-schema=always), not checked"));
	}

}
