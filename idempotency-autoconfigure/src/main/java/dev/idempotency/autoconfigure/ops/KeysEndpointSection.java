package dev.idempotency.autoconfigure.ops;

import dev.idempotency.core.internal.Sha256;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.StoredResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.util.Assert;

/**
 * The {@code keys} section of the {@code idempotency} endpoint: the state of one key
 * ({@code GET keys?scope=&key=}), and the release of an abandoned claim
 * ({@code POST keys/release}) so that a retry runs.
 * <p>
 * Only a claim whose lease has run out is released: a live claim may belong to a request
 * still running. A DONE key is never released: it is what makes a retry replay instead of
 * running twice.
 */
class KeysEndpointSection implements IdempotencyEndpointSection {

	private static final Log logger = LogFactory.getLog(KeysEndpointSection.class);

	private static final Duration RELEASE_LEASE = Duration.ofSeconds(30);

	private final IdempotencyKeyStore store;

	KeysEndpointSection(IdempotencyKeyStore store) {
		Assert.notNull(store, "store must not be null");
		this.store = store;
	}

	@Override
	public String name() {
		return "keys";
	}

	@Override
	public @Nullable Object read(Request request) {
		String scope = scope(request);
		String key = key(request);
		return this.store.find(scope, key).map((record) -> describe(record, request.showBody())).orElse(null);
	}

	@Override
	public @Nullable Object write(String action, Request request) {
		if (!"release".equals(action)) {
			return null;
		}
		String scope = scope(request);
		String key = key(request);
		Optional<IdempotencyRecord> found = this.store.find(scope, key);
		if (found.isEmpty()) {
			return null;
		}
		IdempotencyRecord record = found.get();
		if (record.status() == IdempotencyRecord.Status.DONE) {
			return new Release(false, record.status().name(),
					"The key is DONE: its response is replayed to retries until " + record.expiresAt()
							+ "; a completed key is never released");
		}
		if (!record.isLeaseExpired()) {
			return new Release(false, record.status().name(), "The claim's lease is live for another "
					+ record.remainingLease() + ": the request may still be running; release it after its lease");
		}
		Optional<String> owner = this.store.takeOver(scope, key, RELEASE_LEASE);
		if (owner.isEmpty() || !this.store.release(scope, key, owner.get())) {
			return new Release(false, record.status().name(),
					"The claim changed while releasing it (a retry took it over or it completed): read it again");
		}
		logger.info("Released the abandoned claim of key " + hash(key) + " through the idempotency endpoint");
		return new Release(true, record.status().name(), "Released: the next request with this key runs");
	}

	private static KeyState describe(IdempotencyRecord record, boolean showBody) {
		ResponseState response = null;
		StoredResponse stored = record.response();
		if (stored != null) {
			Map<String, List<String>> headers = stored.headers();
			response = new ResponseState(stored.status(), List.copyOf(headers.keySet()), showBody ? headers : null,
					stored.body().length, showBody ? bodyText(stored.body()) : null);
		}
		return new KeyState(record.scope(), record.key(), record.status().name(), record.requestHash(),
				text(record.lockedUntil()), record.isLeaseExpired(),
				(record.status() == IdempotencyRecord.Status.IN_PROGRESS) ? record.remainingLease().toString() : null,
				record.createdAt().toString(), text(record.completedAt()), record.expiresAt().toString(), response);
	}

	private static String bodyText(byte[] body) {
		try {
			return StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT)
				.decode(java.nio.ByteBuffer.wrap(body))
				.toString();
		}
		catch (CharacterCodingException ex) {
			return "base64:" + Base64.getEncoder().encodeToString(body);
		}
	}

	private static String scope(Request request) {
		return (request.scope() != null) ? request.scope() : "";
	}

	private static String key(Request request) {
		String key = request.key();
		if (key == null) {
			throw new InvalidEndpointRequestException("The 'key' parameter is required", "Missing key");
		}
		try {
			IdempotencyKeys.validate(key);
		}
		catch (InvalidIdempotencyKeyException ex) {
			throw new InvalidEndpointRequestException(ex.getMessage(), "Invalid key");
		}
		return key;
	}

	private static @Nullable String text(@Nullable Instant instant) {
		return (instant != null) ? instant.toString() : null;
	}

	private static String hash(String key) {
		return HexFormat.of().formatHex(Sha256.of(key.getBytes(StandardCharsets.UTF_8)), 0, 8);
	}

	/**
	 * The state of one key.
	 *
	 * @param scope the scope
	 * @param key the key
	 * @param status IN_PROGRESS or DONE
	 * @param requestHash the fingerprint of the request that claimed it
	 * @param lockedUntil the end of the lease of an IN_PROGRESS claim
	 * @param leaseExpired whether an IN_PROGRESS claim's lease has run out
	 * @param remainingLease the rest of the lease of an IN_PROGRESS claim
	 * @param createdAt when it was claimed
	 * @param completedAt when it was completed
	 * @param expiresAt when it stops protecting the key
	 * @param response the stored response of a DONE key
	 */
	record KeyState(String scope, String key, String status, String requestHash, @Nullable String lockedUntil,
			boolean leaseExpired, @Nullable String remainingLease, String createdAt, @Nullable String completedAt,
			String expiresAt, @Nullable ResponseState response) {

	}

	/**
	 * A stored response; headers values and body only when shown.
	 *
	 * @param status the HTTP status
	 * @param headerNames the names of the replayed headers
	 * @param headers the replayed headers, when shown
	 * @param bodyBytes the size of the body
	 * @param body the body as UTF-8 text (or {@code base64:...}), when shown
	 */
	record ResponseState(int status, List<String> headerNames, @Nullable Map<String, List<String>> headers,
			int bodyBytes, @Nullable String body) {

	}

	/**
	 * The outcome of a release.
	 *
	 * @param released whether the claim was released
	 * @param status the key's status before
	 * @param message what happened
	 */
	record Release(boolean released, String status, String message) {

	}

}
