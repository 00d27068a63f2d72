package dev.idempotency.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class against a real PostgreSQL in a schema of its own, dropped after the
 * class (see {@link TestDatabase} for which server).
 * <p>
 * In a plain JUnit test, declare a {@link TestSchema} or {@link javax.sql.DataSource}
 * parameter on a constructor, a lifecycle method or a test method. In a Spring test,
 * {@code spring.datasource.url}, {@code spring.datasource.username} and
 * {@code spring.datasource.password} point at a schema owned by the application context
 * and dropped when the context closes.
 *
 * @since 0.1.0
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(PostgresTestExtension.class)
public @interface PostgresTest {

}
