package dev.idempotency.autoconfigure.ops;

import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.web.WebEndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.InvocationContext;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.ExposableWebEndpoint;
import org.springframework.boot.actuate.endpoint.web.WebEndpointsSupplier;
import org.springframework.boot.actuate.endpoint.web.WebOperation;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The actuator endpoint, run once per database by a subclass.
 */
abstract class IdempotencyEndpointTests {

	private static final StoredResponse RESPONSE = new StoredResponse(200,
			Map.of("Content-Type", List.of("application/json")),
			"{\"card\":\"4242\"}".getBytes(StandardCharsets.UTF_8));

	private final WebApplicationContextRunner contextRunner;

	IdempotencyEndpointTests(TestSchema schema) {
		this.contextRunner = new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class, IdempotencyEndpointAutoConfiguration.class,
					EndpointAutoConfiguration.class, WebEndpointAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
					"idempotency.cleanup.enabled=false", "idempotency.monitor.refresh-interval=0s");
	}

	@Test
	void isNotExposedOverTheWebUnlessIncluded() {
		this.contextRunner.run((context) -> {
			assertThat(context).doesNotHaveBean(IdempotencyEndpoint.class);
			assertThat(webEndpoint(context)).isEmpty();
		});
	}

	@Test
	void isReadOnlyByDefault() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=idempotency")
			.run((context) -> assertThat(operations(context)).containsExactlyInAnyOrder("READ GET idempotency",
					"READ GET idempotency/{section}"));
	}

	@Test
	void offersItsActionsOnlyWithUnrestrictedAccess() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=idempotency",
					"management.endpoint.idempotency.access=UNRESTRICTED")
			.run((context) -> assertThat(operations(context)).containsExactlyInAnyOrder("READ GET idempotency",
					"READ GET idempotency/{section}", "WRITE POST idempotency/{section}/{action}"));
	}

	@Test
	void excludingTheEndpointHidesIt() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=*",
					"management.endpoints.web.exposure.exclude=idempotency")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyEndpoint.class));
	}

	@Test
	void releasesAnAbandonedClaimSoThatARetryRuns() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=idempotency",
					"management.endpoint.idempotency.access=UNRESTRICTED")
			.run((context) -> {
				IdempotencyKeyStore store = context.getBean(IdempotencyKeyStore.class);
				KeyClaim claim = new KeyClaim("alice", "order-42/pay", "h1", Duration.ofMillis(1), Duration.ofHours(1));
				assertThat(store.claim(claim)).isInstanceOf(ClaimResult.Claimed.class);
				assertThat(store.claim(claim)).isInstanceOf(ClaimResult.Existing.class);
				Map<String, Object> state = invoke(context, SecurityContext.NONE, "idempotency/{section}",
						Map.of("section", "keys", "scope", "alice", "key", "order-42/pay"));
				assertThat(state).containsEntry("status", "IN_PROGRESS").containsEntry("leaseExpired", true);
				Map<String, Object> release = invoke(context, SecurityContext.NONE, "idempotency/{section}/{action}",
						Map.of("section", "keys", "action", "release", "scope", "alice", "key", "order-42/pay"));
				assertThat(release).containsEntry("released", true);
				assertThat(store.claim(claim)).isInstanceOf(ClaimResult.Claimed.class);
			});
	}

	@Test
	void neverReleasesALiveClaimNorACompletedKey() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=idempotency")
			.run((context) -> {
				IdempotencyKeyStore store = context.getBean(IdempotencyKeyStore.class);
				store.claim(new KeyClaim("", "live", "h", Duration.ofMinutes(5), Duration.ofHours(1)));
				ClaimResult.Claimed done = (ClaimResult.Claimed) store
					.claim(new KeyClaim("", "done", "h", Duration.ofMinutes(5), Duration.ofHours(1)));
				store.complete("", "done", done.owner(), new StoredResponse(201, Map.of(), new byte[0]),
						Duration.ofHours(1));
				IdempotencyEndpoint endpoint = context.getBean(IdempotencyEndpoint.class);
				assertThat(endpoint.write("keys", "release", null, "live", null))
					.hasFieldOrPropertyWithValue("released", false);
				assertThat(endpoint.write("keys", "release", null, "done", null))
					.hasFieldOrPropertyWithValue("released", false);
				assertThat(store.find("", "live")).isPresent();
				assertThat(store.find("", "done")).isPresent();
				assertThat(endpoint.write("keys", "release", null, "unknown", null)).isNull();
				assertThat(endpoint.write("keys", "unknown-action", null, "live", null)).isNull();
				assertThat(endpoint.read("no-such-section", null, "live", null, null, SecurityContext.NONE)).isNull();
			});
	}

	@Test
	void neverShowsTheStoredBodyByDefault() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=idempotency")
			.run((context) -> {
				complete(context.getBean(IdempotencyKeyStore.class), "secret", RESPONSE);
				Map<String, Object> state = readKey(context, user("admin", "ops"), "secret");
				assertThat(state).extracting("response.bodyBytes").isEqualTo(15);
				assertThat(state).extracting("response.body").isNull();
				assertThat(state).extracting("response.headers").isNull();
				assertThat(state).extracting("response.headerNames").isEqualTo(List.of("Content-Type"));
			});
	}

	@Test
	void whenAuthorizedShowsTheStoredBodyOnlyToAnAuthenticatedCallerInARole() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=idempotency",
					"idempotency.endpoint.show-body=when-authorized", "idempotency.endpoint.roles=ops,admin")
			.run((context) -> {
				complete(context.getBean(IdempotencyKeyStore.class), "guarded", RESPONSE);
				assertThat(readKey(context, SecurityContext.NONE, "guarded")).extracting("response.body").isNull();
				assertThat(readKey(context, user("bob", "support"), "guarded")).extracting("response.body").isNull();
				assertThat(readKey(context, user("carol", "ops"), "guarded")).extracting("response.body")
					.isEqualTo("{\"card\":\"4242\"}");
				assertThat(readKey(context, user("carol", "ops"), "guarded")).extracting("response.headers")
					.isEqualTo(Map.of("Content-Type", List.of("application/json")));
			});
	}

	@Test
	void whenAuthorizedWithoutRolesShowsTheStoredBodyToAnyAuthenticatedCaller() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=idempotency",
					"idempotency.endpoint.show-body=when-authorized")
			.run((context) -> {
				complete(context.getBean(IdempotencyKeyStore.class), "signed-in", RESPONSE);
				assertThat(readKey(context, SecurityContext.NONE, "signed-in")).extracting("response.body").isNull();
				assertThat(readKey(context, user("bob"), "signed-in")).extracting("response.body")
					.isEqualTo("{\"card\":\"4242\"}");
			});
	}

	@Test
	void alwaysShowsTheStoredBodyEvenToAnAnonymousCaller() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=idempotency",
					"idempotency.endpoint.show-body=always")
			.run((context) -> {
				complete(context.getBean(IdempotencyKeyStore.class), "shown", RESPONSE);
				assertThat(readKey(context, SecurityContext.NONE, "shown")).extracting("response.body")
					.isEqualTo("{\"card\":\"4242\"}");
			});
	}

	@Test
	void theFormerBooleanShowBodyIsRejectedAtStartup() {
		this.contextRunner
			.withPropertyValues("management.endpoints.web.exposure.include=idempotency",
					"idempotency.endpoint.show-body=true")
			.run((context) -> assertThat(context).hasFailed().getFailure().rootCause().hasMessageContaining("true"));
	}

	@Test
	void rejectsAMissingOrMalformedKey() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=idempotency")
			.run((context) -> {
				IdempotencyEndpoint endpoint = context.getBean(IdempotencyEndpoint.class);
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> endpoint.read("keys", null, null, null, null, SecurityContext.NONE));
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> endpoint.read("keys", null, "caf\u00e9", null, null, SecurityContext.NONE));
			});
	}

	@Test
	void reportsTheTablesAndTheSections() {
		this.contextRunner.withPropertyValues("management.endpoints.web.exposure.include=idempotency")
			.run((context) -> {
				IdempotencyEndpoint.Report report = context.getBean(IdempotencyEndpoint.class).report();
				assertThat(report.tables()).containsOnlyKeys("idempotency-keys", "processed-events");
				assertThat(report.sections()).containsExactly("keys");
				assertThat(report.readAt()).isNotNull();
			});
	}

	private static Map<String, Object> readKey(AssertableWebApplicationContext context, SecurityContext securityContext,
			String key) {
		return invoke(context, securityContext, "idempotency/{section}", Map.of("section", "keys", "key", key));
	}

	private static SecurityContext user(String name, String... roles) {
		Principal principal = () -> name;
		return new SecurityContext() {

			@Override
			public Principal getPrincipal() {
				return principal;
			}

			@Override
			public boolean isUserInRole(String role) {
				return List.of(roles).contains(role);
			}

		};
	}

	private static void complete(IdempotencyKeyStore store, String key, StoredResponse response) {
		ClaimResult.Claimed claimed = (ClaimResult.Claimed) store
			.claim(new KeyClaim("", key, "h", Duration.ofMinutes(1), Duration.ofHours(1)));
		store.complete("", key, claimed.owner(), response, Duration.ofHours(1));
	}

	private static List<String> operations(AssertableWebApplicationContext context) {
		return webEndpoint(context).orElseThrow()
			.getOperations()
			.stream()
			.map((operation) -> operation.getType() + " " + operation.getRequestPredicate().getHttpMethod() + " "
					+ operation.getRequestPredicate().getPath())
			.toList();
	}

	private static Optional<ExposableWebEndpoint> webEndpoint(AssertableWebApplicationContext context) {
		return context.getBean(WebEndpointsSupplier.class)
			.getEndpoints()
			.stream()
			.filter((endpoint) -> endpoint.getEndpointId().toString().equals("idempotency"))
			.findFirst();
	}

	@SuppressWarnings("unchecked")
	private static Map<String, Object> invoke(AssertableWebApplicationContext context, SecurityContext securityContext,
			String path, Map<String, Object> arguments) {
		WebOperation operation = webEndpoint(context).orElseThrow()
			.getOperations()
			.stream()
			.filter((candidate) -> candidate.getRequestPredicate().getPath().equals(path))
			.findFirst()
			.orElseThrow();
		Object result = operation.invoke(new InvocationContext(securityContext, new HashMap<>(arguments)));
		return new tools.jackson.databind.json.JsonMapper().convertValue(result, Map.class);
	}

}
