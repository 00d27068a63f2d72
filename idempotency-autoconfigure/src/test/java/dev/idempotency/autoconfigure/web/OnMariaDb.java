package dev.idempotency.autoconfigure.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import dev.idempotency.test.MariaDbTest;

import org.springframework.test.context.TestPropertySource;

/**
 * An {@link IdempotentHttpTest} on MariaDB: the test application without the outbox,
 * whose own MariaDB suites are in idempotency-outbox.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@MariaDbTest
@TestPropertySource(
		properties = "spring.autoconfigure.exclude=dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration")
@interface OnMariaDb {

}
