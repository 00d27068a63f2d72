package dev.idempotency.samples.payments;

import java.net.URI;
import java.util.UUID;

import dev.idempotency.web.Idempotent;
import jakarta.validation.Valid;

import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The payments API. {@code POST /payments} needs an {@code Idempotency-Key}: a retry with
 * the same key gets the first response back, byte for byte, and charges nothing.
 */
@RestController
class PaymentController {

	private final Payments payments;

	private final FraudReview review;

	PaymentController(Payments payments, FraudReview review) {
		this.payments = payments;
		this.review = review;
	}

	@PostMapping("/payments")
	@Idempotent
	ResponseEntity<Payment> pay(@Valid @RequestBody PaymentRequest request) throws InterruptedException {
		this.review.review(request.amount());
		Payment payment = this.payments.charge(request.orderId(), request.amount(), request.currency());
		return ResponseEntity.created(URI.create("/payments/" + payment.paymentId())).body(payment);
	}

	@GetMapping("/payments/{paymentId}")
	ResponseEntity<Payment> payment(@PathVariable UUID paymentId) {
		return ResponseEntity.of(this.payments.find(paymentId));
	}

	@GetMapping("/orders/{orderId}/charges")
	Payments.Charges charges(@PathVariable String orderId) {
		return this.payments.chargesOf(orderId);
	}

}
