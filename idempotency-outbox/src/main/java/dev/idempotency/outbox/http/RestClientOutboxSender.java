package dev.idempotency.outbox.http;

import java.util.Set;
import java.util.function.Function;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.OutboxMessage;

import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.util.Assert;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestClientResponseException;

/**
 * {@link OutboxHttpSender} on a {@link RestClient}: sends the payload as the request
 * body, the message's headers as request headers (a {@code Content-Type} header among
 * them sets the media type, JSON otherwise), the idempotency key as
 * {@code Idempotency-Key} and the event id as {@code event-id}. A response other than 2xx
 * fails the delivery; a 4xx that refuses the request itself (any but 408 Request Timeout,
 * 409 Conflict, 425 Too Early and 429 Too Many Requests, which a later attempt may get
 * past) is {@link #isPermanent permanent}: the same request with the same key would be
 * refused again.
 *
 * @since 0.1.0
 */
public final class RestClientOutboxSender implements OutboxHttpSender {

	/** The client errors that sending again may get past. */
	private static final Set<Integer> RETRYABLE_CLIENT_ERRORS = Set.of(408, 409, 425, 429);

	private final RestClient restClient;

	private final HttpMethod method;

	private final Function<OutboxMessage, String> uri;

	/**
	 * Create a sender that POSTs every message to one URI.
	 * @param restClient the client, typically with a base URL and authentication
	 * @param uri the URI, absolute or relative to the client's base URL
	 */
	public RestClientOutboxSender(RestClient restClient, String uri) {
		this(restClient, HttpMethod.POST, (message) -> uri);
	}

	/**
	 * Create a sender.
	 * @param restClient the client, typically with a base URL and authentication
	 * @param method the request method
	 * @param uri the URI of a message, absolute or relative to the client's base URL
	 */
	public RestClientOutboxSender(RestClient restClient, HttpMethod method, Function<OutboxMessage, String> uri) {
		Assert.notNull(restClient, "restClient must not be null");
		Assert.notNull(method, "method must not be null");
		Assert.notNull(uri, "uri must not be null");
		this.restClient = restClient;
		this.method = method;
		this.uri = uri;
	}

	@Override
	public void send(OutboxMessage message) {
		this.restClient.method(this.method).uri(this.uri.apply(message)).headers((headers) -> {
			headers.setContentType(MediaType.APPLICATION_JSON);
			message.headers().forEach(headers::set);
			headers.set(IDEMPOTENCY_KEY_HEADER, message.idempotencyKey());
			headers.set(EventHeaders.EVENT_ID, message.eventId());
			if (message.eventType() != null && !headers.containsHeader(EventHeaders.EVENT_TYPE)) {
				headers.set(EventHeaders.EVENT_TYPE, message.eventType());
			}
		}).body(message.payload()).retrieve().toBodilessEntity();
	}

	@Override
	public boolean isPermanent(Exception failure) {
		return failure instanceof RestClientResponseException response && response.getStatusCode().is4xxClientError()
				&& !RETRYABLE_CLIENT_ERRORS.contains(response.getStatusCode().value());
	}

}
