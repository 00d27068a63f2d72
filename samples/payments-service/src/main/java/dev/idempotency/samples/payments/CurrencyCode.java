package dev.idempotency.samples.payments;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.Currency;
import java.util.Set;
import java.util.stream.Collectors;

import jakarta.validation.Constraint;
import jakarta.validation.ConstraintValidator;
import jakarta.validation.ConstraintValidatorContext;
import jakarta.validation.Payload;
import org.jspecify.annotations.Nullable;

/**
 * The annotated string is an ISO 4217 currency code that the JDK knows, such as
 * {@code EUR}; {@code null} is valid.
 */
@Documented
@Target({ ElementType.FIELD, ElementType.PARAMETER, ElementType.RECORD_COMPONENT, ElementType.METHOD })
@Retention(RetentionPolicy.RUNTIME)
@Constraint(validatedBy = CurrencyCode.Validator.class)
@interface CurrencyCode {

	String message() default "must be an ISO 4217 currency code, such as EUR";

	Class<?>[] groups() default {};

	Class<? extends Payload>[] payload() default {};

	/**
	 * Checks the code against the currencies of the JDK.
	 */
	class Validator implements ConstraintValidator<CurrencyCode, String> {

		private static final Set<String> CODES = Currency.getAvailableCurrencies()
			.stream()
			.map(Currency::getCurrencyCode)
			.collect(Collectors.toUnmodifiableSet());

		@Override
		public boolean isValid(@Nullable String code, ConstraintValidatorContext context) {
			return code == null || CODES.contains(code);
		}

	}

}
