package dev.idempotency.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.autoconfigure.jdbc.AutoConfigureDataSourceInitialization;

/**
 * Adds the idempotency features to a test slice, such as {@code @WebMvcTest}, that leaves
 * them out: the key and event stores on the application's {@code DataSource}, the
 * {@code @Idempotent} filter, which the slice's {@code MockMvc} then applies, the outbox,
 * and the {@code @IdempotentListener} interceptor when Kafka is configured.
 * <p>
 * The tables are made as in the application: like Spring Boot's data slices, it brings
 * the database initialization of the application
 * ({@link AutoConfigureDataSourceInitialization}: Flyway or Liquibase when on the class
 * path, the SQL scripts), so that with Flyway the application's migrations and the
 * library's run in the slice's database, and without it the library's schema script.
 * <p>
 * The stores need a PostgreSQL: combine with {@link PostgresTest}, or configure a
 * {@code DataSource} of your own. The auto-configurations imported are listed in
 * {@code META-INF/spring/dev.idempotency.test.AutoConfigureIdempotency.imports}.
 *
 * @since 0.1.0
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@AutoConfigureDataSourceInitialization
@ImportAutoConfiguration
public @interface AutoConfigureIdempotency {

}
