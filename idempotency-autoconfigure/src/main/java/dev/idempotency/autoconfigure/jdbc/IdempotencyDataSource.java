package dev.idempotency.autoconfigure.jdbc;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.beans.factory.annotation.Qualifier;

/**
 * Qualifier of the {@link javax.sql.DataSource} that the idempotency modules use, in an
 * application with several: the idempotency keys, the processed events and the outbox,
 * their schema script, the library's Flyway migrations, the startup check of the tables,
 * retention cleanup, metrics, health and the endpoint. Without a {@code DataSource} so
 * qualified, they use the application's only or primary one.
 * <p>
 * {@code @Idempotent} handlers, {@code @IdempotentListener} methods and the outbox relay
 * then run in transactions of that {@code DataSource}: the application needs a
 * transaction manager that manages it, which they find among its transaction managers (or
 * which {@code idempotency.web.transaction-manager} and
 * {@code idempotency.kafka.transaction-manager} name), and its business writes that must
 * commit with a key, a mark or an outbox row go to that {@code DataSource} too.
 *
 * @since 0.1.0
 */
@Target({ ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER, ElementType.TYPE, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Qualifier
public @interface IdempotencyDataSource {

}
