package dev.idempotency.autoconfigure.ops;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.IdempotencyMetrics.Operation;
import dev.idempotency.core.IdempotencyMetrics.Outcome;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.prometheus.PrometheusMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Grafana dashboard in {@code docs/grafana} queries only meters, labels and label
 * values that the library registers, read from a Prometheus scrape of an application
 * whose features ran against PostgreSQL: rename a meter, a tag or a probe and this test,
 * not the dashboard, breaks.
 */
@PostgresTest
class GrafanaDashboardTests {

	static final Path DASHBOARD = Path.of("..", "docs", "grafana", "idempotency-dashboard.json");

	private static final Pattern METRIC = Pattern.compile("\\b(idempotency_[a-z0-9_]+)\\s*(\\{([^}]*)\\})?");

	private static final Pattern MATCHER = Pattern.compile("([a-z_]+)\\s*(=~|=)\\s*\"([^\"]*)\"");

	private static final Pattern BY = Pattern.compile("\\bby\\s*\\(([^)]*)\\)");

	private static final Pattern SERIES = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})?\\s");

	private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"([^\"]*)\"");

	private static final Map<String, List<Map<String, String>>> scraped = new HashMap<>();

	@BeforeAll
	static void runTheFeaturesAndScrape(TestSchema schema) {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, MetricsAutoConfiguration.class,
					CompositeMeterRegistryAutoConfiguration.class, PrometheusMetricsExportAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.monitor.refresh-interval=0s",
					"idempotency.cleanup.enabled=true", "idempotency.outbox.relay.enabled=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				IdempotencyMetrics metrics = context.getBean(IdempotencyMetrics.class);
				for (String feature : List.of(IdempotencyMetrics.WEB, IdempotencyMetrics.KAFKA,
						IdempotencyMetrics.OUTBOX)) {
					for (Outcome outcome : Outcome.values()) {
						metrics.outcome(feature, outcome, 1);
					}
					for (Operation operation : Operation.values()) {
						metrics.time(operation, feature, () -> feature);
						metrics.start(operation, feature).stop(new IllegalStateException());
					}
				}
				// A row past its retention, so that the real cleanup deletes and counts
				// it.
				new JdbcTemplate(context.getBean(javax.sql.DataSource.class))
					.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
							+ " VALUES ('g', 'expired', now() - interval '30 days')");
				assertThat(context.getBean(IdempotencyCleanup.class).runOnce()).containsEntry("processed-events", 1L);
				parse(context.getBean(PrometheusMeterRegistry.class).scrape());
			});
	}

	private static void parse(String scrape) {
		for (String line : scrape.split("\n")) {
			Matcher series = SERIES.matcher(line);
			if (!line.startsWith("#") && series.find()) {
				Map<String, String> labels = new HashMap<>();
				if (series.group(3) != null) {
					Matcher label = LABEL.matcher(series.group(3));
					while (label.find()) {
						labels.put(label.group(1), label.group(2));
					}
				}
				scraped.computeIfAbsent(series.group(1), (name) -> new ArrayList<>()).add(labels);
			}
		}
	}

	@Test
	void everyMeterTheDashboardQueriesIsRegistered() throws IOException {
		List<String> expressions = expressions();
		assertThat(expressions).hasSizeGreaterThan(10);
		Set<String> queried = new LinkedHashSet<>();
		for (String expression : expressions) {
			Matcher metric = METRIC.matcher(expression);
			assertThat(metric.find()).as("a library meter in %s", expression).isTrue();
			do {
				queried.add(metric.group(1));
			}
			while (metric.find());
		}
		assertThat(scraped.keySet()).as("meters the library registers").containsAll(queried);
		// Every feature the issue names is on the dashboard.
		assertThat(queried).contains("idempotency_outcomes_total", "idempotency_claim_seconds_sum",
				"idempotency_replay_seconds_max", "idempotency_publish_seconds_count", "idempotency_backlog_rows",
				"idempotency_backlog_oldest_age_seconds", "idempotency_table_cleanup_overdue_seconds",
				"idempotency_cleanup_deleted_rows_total");
	}

	@Test
	void everyLabelTheDashboardSelectsOrGroupsByHasTheValuesItExpects() throws IOException {
		for (String expression : expressions()) {
			Matcher metric = METRIC.matcher(expression);
			Set<String> metrics = new LinkedHashSet<>();
			while (metric.find()) {
				String name = metric.group(1);
				metrics.add(name);
				if (metric.group(3) != null) {
					Matcher matcher = MATCHER.matcher(metric.group(3));
					while (matcher.find()) {
						assertSelects(name, matcher.group(1), matcher.group(2), matcher.group(3), expression);
					}
				}
			}
			Matcher by = BY.matcher(expression);
			while (by.find()) {
				for (String label : by.group(1).split(",")) {
					assertThat(metrics).as("label %s of %s", label.trim(), expression)
						.anyMatch((name) -> scraped.getOrDefault(name, List.of())
							.stream()
							.anyMatch((labels) -> labels.containsKey(label.trim())));
				}
			}
		}
	}

	private static void assertSelects(String name, String label, String operator, String value, String expression) {
		List<String> values = scraped.getOrDefault(name, List.of())
			.stream()
			.map((labels) -> labels.get(label))
			.filter((found) -> found != null)
			.toList();
		if (operator.equals("=")) {
			assertThat(values).as("%s{%s} in %s", name, label, expression).contains(value);
		}
		else {
			for (String alternative : value.split("\\|")) {
				assertThat(values).as("%s{%s} in %s", name, label, expression).contains(alternative);
			}
		}
	}

	private static List<String> expressions() throws IOException {
		JsonNode dashboard = JsonMapper.builder().build().readTree(Files.readString(DASHBOARD));
		assertThat(dashboard.path("title").asString()).isEqualTo("Idempotency");
		List<String> expressions = new ArrayList<>();
		collect(dashboard, expressions);
		return expressions;
	}

	private static void collect(JsonNode node, List<String> expressions) {
		if (node.isObject()) {
			JsonNode expression = node.get("expr");
			if (expression != null) {
				expressions.add(expression.asString());
			}
		}
		node.forEach((child) -> collect(child, expressions));
	}

}
