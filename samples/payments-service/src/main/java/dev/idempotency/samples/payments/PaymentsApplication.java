package dev.idempotency.samples.payments;

import java.time.Duration;

import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.http.RestClientOutboxSender;
import dev.idempotency.outbound.OutboundCalls;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.http.HttpMethod;
import org.springframework.web.client.RestClient;

/**
 * The payments service. Run it with {@code ./mvnw -pl samples/payments-service -am
 * spring-boot:run}: without {@code spring.datasource.url} and
 * {@code spring.kafka.bootstrap-servers} it starts an embedded PostgreSQL and an
 * in-process Kafka broker. It runs on MariaDB too, given its URL, such as
 * {@code --spring.datasource.url=jdbc:mariadb://127.0.0.1:3306/test}.
 */
@SpringBootApplication
public class PaymentsApplication {

	/** The outbox destination of payment requests to the provider. */
	static final String PROVIDER = "payment-provider";

	public static void main(String[] args) {
		SpringApplication.run(PaymentsApplication.class, args);
	}

	/**
	 * Delivers payment requests from the outbox to the provider over HTTP, with the row's
	 * idempotency key as {@code Idempotency-Key}, under the provider's policy
	 * ({@code idempotency.outbound.providers.payment-provider.*}): past its key lifetime
	 * a row is not sent again but left DEAD for manual review. A call takes at most the
	 * client's connect and read timeouts ({@code spring.http.clients.*}): the relay
	 * starts one only when it can end before the lease of its claim.
	 */
	@Bean
	HttpOutboxDestination paymentProvider(RestClient.Builder restClient, Environment environment,
			OutboundCalls outboundCalls) {
		RestClientOutboxSender sender = new RestClientOutboxSender(restClient.build(), HttpMethod.POST,
				(message) -> environment.getProperty("payments.provider.url",
						"http://localhost:" + environment.getProperty("local.server.port") + "/provider/charges"));
		return new HttpOutboxDestination(PROVIDER, sender, outboundCalls, PROVIDER)
			.withCallTimeout(Duration.ofSeconds(10));
	}

}
