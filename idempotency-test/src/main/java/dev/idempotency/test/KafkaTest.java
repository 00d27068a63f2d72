package dev.idempotency.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class against the shared in-process Kafka broker ({@link TestKafkaBroker}).
 * <p>
 * In a plain JUnit test, declare an
 * {@link org.springframework.kafka.test.EmbeddedKafkaBroker EmbeddedKafkaBroker}
 * parameter. In a Spring test, {@code spring.kafka.bootstrap-servers} points at the
 * broker.
 *
 * @since 0.1.0
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(KafkaTestExtension.class)
public @interface KafkaTest {

}
