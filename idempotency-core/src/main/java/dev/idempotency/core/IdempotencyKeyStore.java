package dev.idempotency.core;

import java.time.Duration;
import java.util.Optional;

/**
 * Stores idempotency keys and the responses of the operations they protect.
 * <p>
 * A key is scoped: the same key in two scopes is two unrelated keys. A key is first
 * <em>claimed</em> (IN_PROGRESS, with a lease and an owner token), then
 * <em>completed</em> (DONE, with the stored response) or <em>released</em>. Every change
 * to a claimed key is guarded by its owner token, so a caller whose claim was taken over
 * after its lease expired can change nothing.
 * <p>
 * Methods run in the caller's transaction when there is one, so that {@link #complete
 * complete} commits together with the business writes; outside a transaction each call
 * commits on its own. Time is the database's clock.
 *
 * @since 0.1.0
 */
public interface IdempotencyKeyStore {

	/**
	 * Claim a key: insert it IN_PROGRESS with a new owner token, unless it exists. A row
	 * whose retention has passed does not count as existing.
	 * <p>
	 * Inside a transaction, a concurrent uncommitted claim of the same key makes this
	 * call wait until that transaction ends, for as long as the database lets a statement
	 * wait for a lock; {@link #claim(KeyClaim, Duration)} bounds the wait.
	 * @param claim what to claim
	 * @return {@link ClaimResult.Claimed} with the owner token, or
	 * {@link ClaimResult.Existing} with the record that was there
	 */
	ClaimResult claim(KeyClaim claim);

	/**
	 * Claim a key as part of the caller's transaction, like {@link #claim(KeyClaim)},
	 * waiting at most the given time for a concurrent claim of the same key that is not
	 * committed yet. The bound applies to this claim alone: the caller's statements after
	 * it wait as they would without it.
	 * @param claim what to claim
	 * @param wait the longest wait for a concurrent claim
	 * @return {@link ClaimResult.Claimed} with the owner token,
	 * {@link ClaimResult.Existing} with the record that was there (one committed while
	 * the claim waited included), or {@link ClaimResult.Held} when the concurrent claim
	 * still held the key at the end of the wait, after which the caller's transaction
	 * must be rolled back
	 */
	ClaimResult claim(KeyClaim claim, Duration wait);

	/**
	 * Take over an IN_PROGRESS claim whose lease has expired, with a new owner token and
	 * a new lease. When several callers try at once, exactly one wins.
	 * @param scope the scope of the key
	 * @param key the key
	 * @param lease the new lease
	 * @return the new owner token, or empty when the lease is still live, the key is DONE
	 * or gone, or another caller took it over first
	 */
	Optional<String> takeOver(String scope, String key, Duration lease);

	/**
	 * Mark a claimed key DONE with its response, guarded by the owner token. Call it in
	 * the transaction of the business writes.
	 * @param scope the scope of the key
	 * @param key the key
	 * @param owner the owner token returned by {@link #claim} or {@link #takeOver}
	 * @param response the response to replay to later requests
	 * @param retention how long from now the record protects the key
	 * @return {@link Completion#COMPLETED}; or why not, in which case the caller must
	 * roll back
	 */
	Completion complete(String scope, String key, String owner, StoredResponse response, Duration retention);

	/**
	 * Delete an IN_PROGRESS claim, guarded by the owner token, so that a retry runs
	 * again.
	 * @param scope the scope of the key
	 * @param key the key
	 * @param owner the owner token
	 * @return {@code true} when released; {@code false} when the claim was no longer this
	 * owner's
	 */
	boolean release(String scope, String key, String owner);

	/**
	 * Find the record of a key, whatever its state, unless its retention has passed.
	 * @param scope the scope of the key
	 * @param key the key
	 * @return the record, or empty
	 */
	Optional<IdempotencyRecord> find(String scope, String key);

}
