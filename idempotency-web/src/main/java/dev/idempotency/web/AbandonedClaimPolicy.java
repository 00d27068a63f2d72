package dev.idempotency.web;

/**
 * What to do with a key that is still claimed but whose lease has run out, because the
 * request that claimed it crashed or is stuck.
 *
 * @since 0.1.0
 */
public enum AbandonedClaimPolicy {

	/**
	 * Take the claim over atomically (new owner, new lease) and run the request. The
	 * former owner can no longer commit.
	 */
	TAKE_OVER,

	/**
	 * Answer 409 without running the request, so that someone can check what the
	 * abandoned request did before it is retried.
	 */
	REFUSE

}
