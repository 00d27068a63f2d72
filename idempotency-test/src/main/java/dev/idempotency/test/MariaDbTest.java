package dev.idempotency.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class against a real MariaDB in a database of its own, dropped after the
 * class (see {@link TestMariaDb} for which server).
 * <p>
 * In a plain JUnit test, declare a {@link TestSchema} or {@link javax.sql.DataSource}
 * parameter on a constructor, a lifecycle method or a test method. In a Spring test, the
 * context's data source points at a database owned by the application context and dropped
 * when the context closes, as with {@link PostgresTest}.
 *
 * @since 0.1.0
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(MariaDbTestExtension.class)
public @interface MariaDbTest {

}
