package dev.idempotency.autoconfigure.slice;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.web.Idempotent;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/**
 * The application of the slice tests: one controller with an idempotent operation, and
 * one that holds its request until released.
 */
@SpringBootConfiguration
class SliceTestApplication {

	@RestController
	static class ChargeController {

		final AtomicInteger charges = new AtomicInteger();

		final CountDownLatch entered = new CountDownLatch(1);

		final CountDownLatch release = new CountDownLatch(1);

		@PostMapping("/charges")
		@ResponseStatus(HttpStatus.CREATED)
		@Idempotent
		Map<String, Object> charge(@RequestBody Map<String, Object> charge) {
			return Map.of("id", this.charges.incrementAndGet(), "amount", charge.get("amount"));
		}

		@PostMapping("/slow-charges")
		@ResponseStatus(HttpStatus.CREATED)
		@Idempotent
		Map<String, Object> slowCharge(@RequestBody Map<String, Object> charge) throws InterruptedException {
			this.entered.countDown();
			if (!this.release.await(30, TimeUnit.SECONDS)) {
				throw new IllegalStateException("Never released");
			}
			return Map.of("id", this.charges.incrementAndGet());
		}

	}

}
