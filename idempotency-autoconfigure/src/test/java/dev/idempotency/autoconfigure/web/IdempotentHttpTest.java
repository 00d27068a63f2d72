package dev.idempotency.autoconfigure.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.annotation.AliasFor;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.TestPropertySource;

/**
 * An end-to-end test of {@code @Idempotent}: {@link WebTestApplication} (or the given
 * classes) on a real server on a random port, with the library's tables in a database of
 * its own: the class says which, with {@code @PostgresTest} or {@code @MariaDbTest}. The
 * application is closed after the test class, so that its connection pool does not
 * outlive it on a server that other builds share.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@TestPropertySource(properties = "idempotency.jdbc.initialize-schema=always")
@DirtiesContext
@interface IdempotentHttpTest {

	/**
	 * The application's classes.
	 * @return the classes
	 */
	@AliasFor(annotation = SpringBootTest.class, attribute = "classes")
	Class<?>[] classes() default WebTestApplication.class;

	/**
	 * Properties of the application, besides its tables.
	 * @return the properties
	 */
	@AliasFor(annotation = SpringBootTest.class, attribute = "properties")
	String[] properties() default {};

}
