package dev.idempotency.core;

/**
 * The outcome of {@link IdempotencyKeyStore#claim}: either this caller now owns the key,
 * or the key already had a record.
 */
public sealed interface ClaimResult permits ClaimResult.Claimed, ClaimResult.Existing {

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

}
