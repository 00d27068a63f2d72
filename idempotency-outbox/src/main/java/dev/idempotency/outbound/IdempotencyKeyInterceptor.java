package dev.idempotency.outbound;

import java.io.IOException;

import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * Sets the idempotency key of the operation that {@link OutboundCalls#call} runs on the
 * current thread as a request header, {@code Idempotency-Key} unless the provider's
 * policy names another. Requests made outside {@link OutboundCalls#call} pass unchanged.
 * <p>
 * Register it once on the client:
 * {@code RestClient.builder().requestInterceptor(new IdempotencyKeyInterceptor())}.
 *
 * @since 0.1.0
 */
public final class IdempotencyKeyInterceptor implements ClientHttpRequestInterceptor {

	@Override
	public ClientHttpResponse intercept(HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
			throws IOException {
		OutboundCalls.Binding binding = OutboundCalls.currentBinding();
		if (binding != null) {
			String key = binding.operation().key();
			String present = request.getHeaders().getFirst(binding.headerName());
			if (present == null) {
				request.getHeaders().set(binding.headerName(), key);
			}
			else if (!present.equals(key)) {
				throw new IllegalStateException("The request already has a " + binding.headerName()
						+ " header that differs from the key of operation " + binding.operation().keyHash()
						+ " (key hash); a key belongs to the operation, send no other");
			}
		}
		return execution.execute(request, body);
	}

}
