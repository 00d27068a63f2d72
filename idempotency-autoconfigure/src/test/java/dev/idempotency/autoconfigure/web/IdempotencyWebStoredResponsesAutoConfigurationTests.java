package dev.idempotency.autoconfigure.web;

import java.time.Duration;
import java.util.Base64;
import java.util.List;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import dev.idempotency.web.AesGcmStoredResponseEncryptor;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.IdempotencyFilter;
import dev.idempotency.web.Idempotent;
import dev.idempotency.web.StoredResponseEncryptor;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The settings that protect stored responses and bound a duplicate's wait: credential
 * headers, encryption at rest, and {@code wait-for}, each with the startup failure its
 * misconfiguration gets.
 */
@PostgresTest
class IdempotencyWebStoredResponsesAutoConfigurationTests {

	private static final String KEY = Base64.getEncoder().encodeToString(new byte[32]);

	private final WebApplicationContextRunner contextRunner;

	IdempotencyWebStoredResponsesAutoConfigurationTests(TestSchema schema) {
		this.contextRunner = new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class,
					IdempotencyWebAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword());
	}

	@Test
	void storedCredentialHeadersProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.stored-credential-headers=Set-Cookie")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("storedCredentialHeaders", List.of("Set-Cookie")));
	}

	@Test
	void aCredentialHeaderAmongTheReplayedHeadersAloneFailsTheStartupNamingTheOptIn() {
		this.contextRunner.withUserConfiguration(SyncController.class)
			.withPropertyValues("idempotency.web.replayed-headers=X-Request-Id,set-cookie")
			.run((context) -> assertThat(context).getFailure()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("[set-cookie]")
				.hasMessageContaining("idempotency.web.stored-credential-headers"));
	}

	@Test
	void aCredentialHeaderAmongTheReplayedHeadersStartsWhenItIsStoredDeliberately() {
		this.contextRunner.withUserConfiguration(SyncController.class)
			.withPropertyValues("idempotency.web.replayed-headers=Set-Cookie",
					"idempotency.web.stored-credential-headers=Set-Cookie")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void aStoredCredentialHeaderThatIsNoCredentialHeaderFailsTheStartup() {
		this.contextRunner.withPropertyValues("idempotency.web.stored-credential-headers=X-Session")
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("'X-Session' is no credential header"));
	}

	@Test
	void withoutAKeyResponsesAreStoredAsTheyWereSent() {
		this.contextRunner.run((context) -> {
			assertThat(context).doesNotHaveBean(StoredResponseEncryptor.class);
			assertThat(context.getBean(IdempotencyFilter.class)).hasFieldOrPropertyWithValue("storedResponseEncryptor",
					null);
		});
	}

	@Test
	void encryptionKeyProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.encryption.key=" + KEY).run((context) -> {
			assertThat(context).hasSingleBean(AesGcmStoredResponseEncryptor.class);
			assertThat(context.getBean(IdempotencyFilter.class)).hasFieldOrPropertyWithValue("storedResponseEncryptor",
					context.getBean(StoredResponseEncryptor.class));
		});
	}

	@Test
	void encryptionPreviousKeysProperty() {
		String previous = Base64.getEncoder().encodeToString(new byte[16]);
		this.contextRunner
			.withPropertyValues("idempotency.web.encryption.key=" + KEY,
					"idempotency.web.encryption.previous-keys=" + previous)
			.run((context) -> assertThat(context.getBean(AesGcmStoredResponseEncryptor.class)).extracting("keys")
				.asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
				.hasSize(2));
	}

	@Test
	void anEncryptionKeyOfAnotherLengthFailsTheStartupWithoutShowingIt() {
		String shortKey = Base64.getEncoder().encodeToString("too-short-a-key".getBytes());
		this.contextRunner.withPropertyValues("idempotency.web.encryption.key=" + shortKey)
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("idempotency.web.encryption.key is 15 bytes long")
				.hasMessageContaining("16 or 32 bytes")
				.hasMessageNotContaining(shortKey));
	}

	@Test
	void anEncryptionKeyThatIsNoBase64FailsTheStartupWithoutShowingIt() {
		this.contextRunner.withPropertyValues("idempotency.web.encryption.key=not base64 at all!")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("idempotency.web.encryption.key is not base64")
				.hasMessageNotContaining("at all"));
	}

	@Test
	void aPreviousKeyOfAnotherLengthFailsTheStartupNamingIt() {
		this.contextRunner
			.withPropertyValues("idempotency.web.encryption.key=" + KEY,
					"idempotency.web.encryption.previous-keys=" + KEY + ",AAAA")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.web.encryption.previous-keys[1] is 3 bytes long"));
	}

	@Test
	void aUserDefinedEncryptorIsUsed() {
		this.contextRunner.withUserConfiguration(UserEncryptor.class)
			.withPropertyValues("idempotency.web.encryption.key=" + KEY)
			.run((context) -> {
				assertThat(context).hasSingleBean(StoredResponseEncryptor.class)
					.doesNotHaveBean(AesGcmStoredResponseEncryptor.class);
				assertThat(context.getBean(IdempotencyFilter.class)).hasFieldOrPropertyWithValue(
						"storedResponseEncryptor", context.getBean(StoredResponseEncryptor.class));
			});
	}

	@Test
	void waitForProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.wait-for=3s")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("defaultWaitFor", Duration.ofSeconds(3)));
	}

	@Test
	void aWaitForOnASingleTransactionHandlerFailsTheStartupNamingTheLockTimeout() {
		this.contextRunner.withUserConfiguration(SingleTransactionWaitController.class)
			.run((context) -> assertThat(context).getFailure()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("SingleTransactionWaitController#create")
				.hasMessageContaining("idempotency.web.lock-timeout"));
	}

	@Test
	void anUnresolvableWaitForPlaceholderFailsTheStartupNamingTheHandler() {
		this.contextRunner.withUserConfiguration(PlaceholderWaitController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("PlaceholderWaitController#create")
				.hasMessageContaining("test.wait-for"));
	}

	@Test
	void aNegativeWaitForFailsTheStartup() {
		this.contextRunner.withUserConfiguration(PlaceholderWaitController.class)
			.withPropertyValues("test.wait-for=-PT1S")
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("@Idempotent(waitFor) must not be negative"));
	}

	@Test
	void aWaitForPlaceholderIsResolved() {
		this.contextRunner.withUserConfiguration(PlaceholderWaitController.class)
			.withPropertyValues("test.wait-for=750ms")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class MvcConfiguration {

	}

	@Configuration(proxyBeanMethods = false)
	static class UserEncryptor {

		@Bean
		StoredResponseEncryptor userEncryptor() {
			return new StoredResponseEncryptor() {

				@Override
				public byte[] encrypt(byte[] plaintext, byte[] associatedData) {
					return plaintext;
				}

				@Override
				public byte[] decrypt(byte[] ciphertext, byte[] associatedData) {
					return ciphertext;
				}

			};
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class SyncController {

		@PostMapping("/sync")
		@Idempotent
		String create() {
			return "ok";
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class SingleTransactionWaitController {

		@PostMapping("/single/wait")
		@Idempotent(mode = ClaimMode.SINGLE_TRANSACTION, waitFor = "2s")
		String create() {
			return "ok";
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class PlaceholderWaitController {

		@PostMapping("/placeholder/wait")
		@Idempotent(waitFor = "${test.wait-for}")
		String create() {
			return "ok";
		}

	}

}
