package dev.idempotency.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;

/**
 * Adds the idempotency features to a test slice, such as {@code @WebMvcTest}, that leaves
 * them out: the key and event stores on the application's {@code DataSource}, the
 * {@code @Idempotent} filter, which the slice's {@code MockMvc} then applies, and the
 * {@code @IdempotentListener} interceptor when Kafka is configured.
 * <p>
 * The stores need a PostgreSQL: combine with {@link PostgresTest}, or configure a
 * {@code DataSource} of your own. The auto-configurations imported are listed in
 * {@code META-INF/spring/dev.idempotency.test.AutoConfigureIdempotency.imports}.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ImportAutoConfiguration
public @interface AutoConfigureIdempotency {

}
