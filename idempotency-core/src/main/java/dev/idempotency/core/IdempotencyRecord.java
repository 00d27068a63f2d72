package dev.idempotency.core;

import java.time.Duration;
import java.time.Instant;

import org.jspecify.annotations.Nullable;

/**
 * The stored state of one idempotency key.
 *
 * @param scope the scope of the key
 * @param key the key
 * @param requestHash the fingerprint of the request that claimed the key
 * @param status IN_PROGRESS or DONE
 * @param response the stored response, when DONE
 * @param lockedUntil the end of the lease, when IN_PROGRESS
 * @param createdAt when the key was claimed
 * @param completedAt when the key was completed, when DONE
 * @param expiresAt when the record stops protecting the key
 * @param readAt the database's time when the record was read, against which the lease is
 * judged
 * @since 0.1.0
 */
public record IdempotencyRecord(String scope, String key, String requestHash, Status status,
		@Nullable StoredResponse response, @Nullable Instant lockedUntil, Instant createdAt,
		@Nullable Instant completedAt, Instant expiresAt, Instant readAt) {

	/**
	 * Whether the key is IN_PROGRESS and its lease has run out, so that it may be taken
	 * over.
	 * @return {@code true} for an abandoned claim
	 */
	public boolean isLeaseExpired() {
		return this.status == Status.IN_PROGRESS
				&& (this.lockedUntil == null || !this.lockedUntil.isAfter(this.readAt));
	}

	/**
	 * How long until the lease of an IN_PROGRESS key runs out, as of {@link #readAt()}.
	 * @return the remaining lease, zero when expired or DONE
	 */
	public Duration remainingLease() {
		if (this.status != Status.IN_PROGRESS || this.lockedUntil == null || isLeaseExpired()) {
			return Duration.ZERO;
		}
		return Duration.between(this.readAt, this.lockedUntil);
	}

	/**
	 * Whether this record was claimed by a request with the given fingerprint.
	 * @param requestHash the fingerprint of the current request
	 * @return {@code true} when the fingerprints match
	 */
	public boolean matches(String requestHash) {
		return this.requestHash.equals(requestHash);
	}

	/**
	 * The state of a key.
	 */
	public enum Status {

		/**
		 * Claimed; the operation is running or was abandoned.
		 */
		IN_PROGRESS,

		/**
		 * Completed; the response is stored for replay.
		 */
		DONE

	}

}
