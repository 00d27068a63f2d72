package dev.idempotency.autoconfigure.web;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import dev.idempotency.web.AbandonedClaimPolicy;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.IdempotencyFilter;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * Configuration properties of {@code @Idempotent} for Spring MVC. The mode, lease,
 * retention and abandoned-claim policy can be overridden per handler on the annotation.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency.web")
public class IdempotencyWebProperties {

	/**
	 * Default position of the filter in the servlet filter chain: after Spring Security,
	 * so that the principal is known.
	 */
	public static final int DEFAULT_FILTER_ORDER = 0;

	/**
	 * Whether to serve the Idempotency-Key protocol for @Idempotent handlers.
	 */
	private boolean enabled = true;

	/**
	 * How keys are claimed by handlers that do not choose: in a transaction of their own
	 * before the handler runs (two-phase), or as the first statement of the handler's
	 * transaction (single-transaction).
	 */
	private ClaimMode mode = ClaimMode.TWO_PHASE;

	/**
	 * How long a two-phase claim stays exclusive before another request may take it over.
	 * Must exceed the longest run of a handler.
	 */
	private Duration lease = IdempotencyFilter.DEFAULT_LEASE;

	/**
	 * How long a completed key is remembered and its response replayed.
	 */
	private Duration retention = IdempotencyFilter.DEFAULT_RETENTION;

	/**
	 * How long a duplicate of a running single-transaction request waits for it before
	 * getting 409.
	 */
	private Duration lockTimeout = IdempotencyFilter.DEFAULT_LOCK_TIMEOUT;

	/**
	 * Longest wait the Retry-After header of a 409 for a running request asks for: the
	 * header is the rest of that request's lease, or this when it is shorter, in whole
	 * seconds. At least one second.
	 */
	private Duration maxRetryAfter = IdempotencyFilter.DEFAULT_MAX_RETRY_AFTER;

	/**
	 * How long a duplicate of a running two-phase request waits for it, holding no
	 * database connection, before getting 409; 0 for not at all. @Idempotent(waitFor)
	 * overrides it per handler.
	 */
	private Duration waitFor = IdempotencyFilter.DEFAULT_WAIT_FOR;

	/**
	 * Longest time a waiting single-transaction duplicate holds a database connection at
	 * a time, while the request it waits for runs on another instance; between attempts
	 * it holds none. A duplicate of a request of the same instance waits holding none.
	 */
	private Duration lockAttemptTimeout = IdempotencyFilter.DEFAULT_LOCK_ATTEMPT_TIMEOUT;

	/**
	 * Largest number of releases of two-phase claims that wait at once, retried in the
	 * background, for the database to answer again. Past it, the claim of a failed
	 * request stays until its lease ends.
	 */
	private int maxPendingReleases = IdempotencyFilter.DEFAULT_MAX_PENDING_RELEASES;

	/**
	 * Whether the transaction manager of the keys refuses a transactional method that
	 * joins an @Idempotent handler's transaction with another isolation level or
	 * read-only flag, instead of running it silently with the handler's. Applies to the
	 * whole application.
	 */
	private boolean validateExistingTransactions = true;

	/**
	 * What to do with a claim whose lease has expired: take it over and run the request,
	 * or refuse with 409 for manual review.
	 */
	private AbandonedClaimPolicy abandonedClaims = AbandonedClaimPolicy.TAKE_OVER;

	/**
	 * Largest response body stored for replay. A larger response is sent and its key
	 * completed, but repeats get a 409 problem instead of a replay.
	 */
	private DataSize maxStoredBodySize = DataSize.ofBytes(IdempotencyFilter.DEFAULT_MAX_STORED_BODY_SIZE);

	/**
	 * Largest request body read into memory for the fingerprint. A larger body gets a 413
	 * problem before its key is claimed. Multipart bodies, and forms that the servlet
	 * container parses, are parsed by it under its own limits.
	 */
	private DataSize maxRequestBodySize = DataSize.ofBytes(IdempotencyFilter.DEFAULT_MAX_REQUEST_BODY_SIZE);

	/**
	 * Largest response held in memory until the transaction commits. A handler whose
	 * response is larger has its work rolled back and its key released, and the client
	 * gets a 500 problem.
	 */
	private DataSize maxResponseSize = DataSize.ofBytes(IdempotencyFilter.DEFAULT_MAX_RESPONSE_SIZE);

	/**
	 * Response headers replayed besides Content-Type, the other representation headers
	 * (Content-Encoding, Content-Language, Content-Location, Content-Disposition,
	 * Content-Range, Content-Digest, Repr-Digest), Location, ETag and Last-Modified.
	 * Credential headers go in stored-credential-headers instead.
	 */
	private List<String> replayedHeaders = new ArrayList<>();

	/**
	 * Credential headers (Set-Cookie, Set-Cookie2, Authorization, Proxy-Authorization,
	 * WWW-Authenticate, Proxy-Authenticate, Authentication-Info,
	 * Proxy-Authentication-Info) that are stored and replayed. By default none is: the
	 * first response carries them to its client, a replay never does.
	 */
	private List<String> storedCredentialHeaders = new ArrayList<>();

	/**
	 * Encryption at rest of stored responses.
	 */
	private final Encryption encryption = new Encryption();

	/**
	 * 4xx statuses that are not final: the transaction rolls back and the key is released
	 * so that a retry runs again. Every other 4xx is stored and replayed.
	 */
	private Set<Integer> releasedClientErrors = new LinkedHashSet<>(IdempotencyFilter.DEFAULT_RELEASED_CLIENT_ERRORS);

	/**
	 * Order of the filter in the servlet filter chain.
	 */
	private int filterOrder = DEFAULT_FILTER_ORDER;

	/**
	 * Name of the transaction manager bean that @Idempotent handlers run in. It must
	 * manage the DataSource of the idempotency keys. By default, the only transaction
	 * manager that does (or the primary one among several).
	 */
	private @Nullable String transactionManager;

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public Duration getMaxRetryAfter() {
		return this.maxRetryAfter;
	}

	public void setMaxRetryAfter(Duration maxRetryAfter) {
		this.maxRetryAfter = maxRetryAfter;
	}

	public ClaimMode getMode() {
		return this.mode;
	}

	public void setMode(ClaimMode mode) {
		this.mode = mode;
	}

	public Duration getLease() {
		return this.lease;
	}

	public void setLease(Duration lease) {
		this.lease = lease;
	}

	public Duration getRetention() {
		return this.retention;
	}

	public void setRetention(Duration retention) {
		this.retention = retention;
	}

	public Duration getLockTimeout() {
		return this.lockTimeout;
	}

	public void setLockTimeout(Duration lockTimeout) {
		this.lockTimeout = lockTimeout;
	}

	public Duration getLockAttemptTimeout() {
		return this.lockAttemptTimeout;
	}

	public void setLockAttemptTimeout(Duration lockAttemptTimeout) {
		this.lockAttemptTimeout = lockAttemptTimeout;
	}

	public Duration getWaitFor() {
		return this.waitFor;
	}

	public void setWaitFor(Duration waitFor) {
		this.waitFor = waitFor;
	}

	public int getMaxPendingReleases() {
		return this.maxPendingReleases;
	}

	public void setMaxPendingReleases(int maxPendingReleases) {
		this.maxPendingReleases = maxPendingReleases;
	}

	public boolean isValidateExistingTransactions() {
		return this.validateExistingTransactions;
	}

	public void setValidateExistingTransactions(boolean validateExistingTransactions) {
		this.validateExistingTransactions = validateExistingTransactions;
	}

	public AbandonedClaimPolicy getAbandonedClaims() {
		return this.abandonedClaims;
	}

	public void setAbandonedClaims(AbandonedClaimPolicy abandonedClaims) {
		this.abandonedClaims = abandonedClaims;
	}

	public DataSize getMaxStoredBodySize() {
		return this.maxStoredBodySize;
	}

	public void setMaxStoredBodySize(DataSize maxStoredBodySize) {
		this.maxStoredBodySize = maxStoredBodySize;
	}

	public DataSize getMaxRequestBodySize() {
		return this.maxRequestBodySize;
	}

	public void setMaxRequestBodySize(DataSize maxRequestBodySize) {
		this.maxRequestBodySize = maxRequestBodySize;
	}

	public DataSize getMaxResponseSize() {
		return this.maxResponseSize;
	}

	public void setMaxResponseSize(DataSize maxResponseSize) {
		this.maxResponseSize = maxResponseSize;
	}

	public List<String> getReplayedHeaders() {
		return this.replayedHeaders;
	}

	public void setReplayedHeaders(List<String> replayedHeaders) {
		this.replayedHeaders = replayedHeaders;
	}

	public List<String> getStoredCredentialHeaders() {
		return this.storedCredentialHeaders;
	}

	public void setStoredCredentialHeaders(List<String> storedCredentialHeaders) {
		this.storedCredentialHeaders = storedCredentialHeaders;
	}

	public Encryption getEncryption() {
		return this.encryption;
	}

	public Set<Integer> getReleasedClientErrors() {
		return this.releasedClientErrors;
	}

	public void setReleasedClientErrors(Set<Integer> releasedClientErrors) {
		this.releasedClientErrors = releasedClientErrors;
	}

	public int getFilterOrder() {
		return this.filterOrder;
	}

	public void setFilterOrder(int filterOrder) {
		this.filterOrder = filterOrder;
	}

	public @Nullable String getTransactionManager() {
		return this.transactionManager;
	}

	public void setTransactionManager(@Nullable String transactionManager) {
		this.transactionManager = transactionManager;
	}

	/**
	 * Encryption at rest of the stored responses, with AES-GCM.
	 */
	public static class Encryption {

		/**
		 * AES key (128 or 256 bits, in base64) that stored response headers and bodies
		 * are encrypted with. When unset, they are stored as they were sent.
		 */
		private @Nullable String key;

		/**
		 * Previous AES keys (in base64) that responses stored before a key rotation still
		 * decrypt with. A response whose key is in neither is answered with a 500
		 * problem.
		 */
		private List<String> previousKeys = new ArrayList<>();

		public @Nullable String getKey() {
			return this.key;
		}

		public void setKey(@Nullable String key) {
			this.key = key;
		}

		public List<String> getPreviousKeys() {
			return this.previousKeys;
		}

		public void setPreviousKeys(List<String> previousKeys) {
			this.previousKeys = previousKeys;
		}

	}

}
