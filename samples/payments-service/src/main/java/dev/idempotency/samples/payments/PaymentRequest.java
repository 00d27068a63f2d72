package dev.idempotency.samples.payments;

import java.math.BigDecimal;

import jakarta.validation.constraints.DecimalMax;
import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Digits;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;

/**
 * The body of {@code POST /payments}, validated before anything is charged: a refused
 * request runs nothing, and its {@code Idempotency-Key} stays free for the corrected one.
 * The messages are the API's own, the same in every locale.
 *
 * @param orderId the order to pay: 1 to 64 letters, digits, {@code .}, {@code _} or
 * {@code -}
 * @param amount the amount: positive, at most 1 000 000, with at most two decimals
 * @param currency the currency, an ISO 4217 code such as {@code EUR}
 */
record PaymentRequest(
		@NotBlank(message = "is required") @Size(max = 64, message = "must be at most 64 characters") @Pattern(
				regexp = "[A-Za-z0-9._-]*",
				message = "must hold only letters, digits, '.', '_' and '-'") String orderId,
		@NotNull(message = "is required") @DecimalMin(value = "0", inclusive = false,
				message = "must be greater than 0") @DecimalMax(value = "1000000",
						message = "must be at most 1000000") @Digits(integer = 7, fraction = 2,
								message = "must have at most 2 decimals") BigDecimal amount,
		@NotNull(message = "is required") @CurrencyCode String currency) {
}
