package dev.idempotency.samples.crashdemo;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * One consumer process of the demo: the naive or the idempotent listener, chosen by
 * {@code demo.variant}.
 */
@SpringBootApplication
public class ConsumerApplication {

	@Bean
	Charges charges(JdbcTemplate jdbc) {
		return new Charges(jdbc);
	}

	@Bean
	SlowDownstream slowDownstream(org.springframework.core.env.Environment environment) {
		return new SlowDownstream(environment.getProperty("demo.slow-after-commit", Boolean.class, false));
	}

}
