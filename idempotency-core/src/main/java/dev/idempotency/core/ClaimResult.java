package dev.idempotency.core;

/**
 * The outcome of {@link IdempotencyKeyStore#claim}: this caller now owns the key, or the
 * key already had a record, or (for a claim that waits a bounded time) a concurrent claim
 * of the key still holds it.
 *
 * @since 0.1.0
 */
public sealed interface ClaimResult permits ClaimResult.Claimed, ClaimResult.Existing, ClaimResult.Held {

	/**
	 * The key was free and is now IN_PROGRESS under this caller's owner token.
	 *
	 * @param owner the owner token that guards completion and release
	 */
	record Claimed(String owner) implements ClaimResult {
	}

	/**
	 * The key already had a record.
	 *
	 * @param record the record as it was read after the failed insert
	 */
	record Existing(IdempotencyRecord record) implements ClaimResult {
	}

	/**
	 * A concurrent claim of the key, not committed yet, still held it when the wait of
	 * {@link IdempotencyKeyStore#claim(KeyClaim, java.time.Duration)} ran out. Nothing
	 * was claimed, and the caller's transaction must be rolled back.
	 */
	record Held() implements ClaimResult {
	}

}
