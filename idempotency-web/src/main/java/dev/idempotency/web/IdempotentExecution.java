package dev.idempotency.web;

import java.io.IOException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpHeaders;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.util.WebUtils;

/**
 * One request under {@code @Idempotent}, from its claim to its answer: claim the key (or
 * settle with the record that holds it), run the handler in the business transaction,
 * complete the key with the response in that transaction, and release the response only
 * after the commit. A failed request gives its claim back. How the key is claimed and
 * given back is its claim mode's ({@link TwoPhaseClaim}, {@link SingleTransactionClaim}).
 */
final class IdempotentExecution {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	private final Settings settings;

	private final EndpointSettings endpoint;

	private final String scope;

	private final String key;

	private final String fingerprint;

	private final HttpServletRequest request;

	private final HttpServletResponse response;

	private final IdempotentEndpoints.Match match;

	private final KeyHash keyHash;

	IdempotentExecution(Settings settings, EndpointSettings endpoint, String scope, String key, String fingerprint,
			HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match) {
		this.settings = settings;
		this.endpoint = endpoint;
		this.scope = scope;
		this.key = key;
		this.fingerprint = fingerprint;
		this.request = request;
		this.response = response;
		this.match = match;
		this.keyHash = new KeyHash(scope, key);
	}

	void run(IdempotentRequest target, FilterChain chain) throws ServletException, IOException {
		HeldClaim claim = (this.endpoint.mode() == ClaimMode.TWO_PHASE) ? TwoPhaseClaim.acquire(this)
				: SingleTransactionClaim.acquire(this);
		if (claim == null) {
			return;
		}
		try {
			execute(claim, target, chain);
		}
		finally {
			if (claim.isOpen()) {
				claim.abandon();
			}
		}
	}

	/**
	 * Answer a request whose key already has a record, or take an abandoned claim over.
	 * @param takeOver takes the claim over, in the claim mode's transaction
	 * @param find reads the record again, in the claim mode's transaction
	 * @return the owner token after a take-over; {@code null} when answered
	 */
	@Nullable String settle(IdempotencyRecord record, Supplier<Optional<String>> takeOver,
			Supplier<Optional<IdempotencyRecord>> find) throws IOException {
		if (!record.matches(this.fingerprint)) {
			responses().keyReused(this.request, this.response, this.match, this.keyHash);
			return null;
		}
		if (record.status() == IdempotencyRecord.Status.DONE) {
			responses().replay(record, this.request, this.response, this.match, this.keyHash);
			return null;
		}
		if (!record.isLeaseExpired()) {
			responses().keyInUse(this.request, this.response, this.match, record.remainingLease(), this.keyHash);
			return null;
		}
		if (this.endpoint.abandonedClaimPolicy() == AbandonedClaimPolicy.REFUSE) {
			responses().abandoned(this.request, this.response, this.match, this.keyHash);
			return null;
		}
		Optional<String> owner = takeOver.get();
		if (owner.isPresent()) {
			log.info("Key " + this.keyHash + " was abandoned by the request that claimed it; taking it over");
			return owner.get();
		}
		Optional<IdempotencyRecord> now = find.get();
		if (now.isPresent() && now.get().status() == IdempotencyRecord.Status.DONE
				&& now.get().matches(this.fingerprint)) {
			responses().replay(now.get(), this.request, this.response, this.match, this.keyHash);
		}
		else {
			responses().keyInUse(this.request, this.response, this.match, Duration.ofSeconds(1), this.keyHash);
		}
		return null;
	}

	/**
	 * Whether a record was claimed by a request like this one.
	 */
	boolean isSameRequest(IdempotencyRecord record) {
		return record.matches(this.fingerprint);
	}

	private void execute(HeldClaim claim, IdempotentRequest target, FilterChain chain)
			throws ServletException, IOException {
		BufferedResponse buffered = new BufferedResponse(this.response, this.settings.maxResponseSize());
		this.settings.metrics().executed(IdempotencyMetrics.WEB);
		Throwable thrown = runHandler(claim, target, chain, buffered);
		Throwable failure = (thrown != null) ? thrown : failure(target);
		IllegalTransactionStateException incompatible = incompatibleTransaction(failure);
		if (incompatible != null) {
			claim.abandon();
			responses().transactionIncompatible(this.request, this.response, this.match, incompatible, this.keyHash);
			return;
		}
		int status = buffered.getStatus();
		if (buffered.isOverflowed()) {
			claim.abandon();
			responses().responseTooLarge(this.request, this.response, this.match, this.settings.maxResponseSize(),
					this.keyHash);
			return;
		}
		if ((failure != null && !ran(failure)) || status >= 500
				|| this.settings.releasedClientErrors().contains(status)) {
			// Nothing to remember: Spring MVC refused the request before the handler ran
			// (a body it could not read, an argument it could not bind or validate), or
			// the outcome is not final. The corrected or later request uses the same key.
			claim.abandon();
			if (log.isDebugEnabled()) {
				log.debug("Key " + this.keyHash + " released after status " + status);
			}
			buffered.release();
			return;
		}
		if (buffered.getErrorStatus() != null) {
			responses().renderError(this.request, buffered, status);
		}
		StoredResponse stored = capture(buffered, status);
		if (failure != null || claim.isRollbackOnly()) {
			// The handler failed (an exception it threw was resolved into a response, or
			// its transaction was marked rollback-only): its work is rolled back and only
			// a decided outcome is kept.
			if (failure != null || status >= 400) {
				claim.undoAndStore(stored);
				buffered.release();
			}
			else {
				claim.abandon();
				responses().commitFailed(this.request, this.response, this.match, null, this.keyHash);
			}
			return;
		}
		completeAndCommit(claim, stored, buffered);
	}

	/**
	 * Run the handler into the buffered response.
	 * @return an exception of the handler that the library answers itself, if any
	 */
	private @Nullable Throwable runHandler(HeldClaim claim, IdempotentRequest target, FilterChain chain,
			BufferedResponse buffered) throws ServletException, IOException {
		try {
			chain.doFilter(target, buffered);
		}
		catch (ServletException | IOException | RuntimeException | Error ex) {
			if (target.isAsyncRefused()) {
				keepClaimForWorkElsewhere(claim);
			}
			else if (incompatibleTransaction(ex) != null) {
				return ex;
			}
			if (!this.response.isCommitted()) {
				this.response.reset();
			}
			throw ex;
		}
		if (target.isAsyncRefused() || target.isAsyncStarted()) {
			keepClaimForWorkElsewhere(claim);
			this.response.reset();
			throw new IllegalStateException("@Idempotent handler " + this.endpoint.name()
					+ " returned an asynchronous result, which cannot be held until its transaction commits");
		}
		return null;
	}

	/**
	 * Complete the key with the response in the business transaction, commit, and only
	 * then send the response.
	 */
	private void completeAndCommit(HeldClaim claim, StoredResponse stored, BufferedResponse buffered)
			throws IOException {
		Completion completion;
		try {
			completion = claim.complete(stored);
		}
		catch (RuntimeException ex) {
			claim.abandon();
			responses().commitFailed(this.request, this.response, this.match, ex, this.keyHash);
			return;
		}
		if (completion == Completion.CLAIM_LOST) {
			claim.abandon();
			responses().claimLost(this.request, this.response, this.match, this.keyHash);
			return;
		}
		if (completion == Completion.TRANSACTION_ABORTED) {
			claim.abandon();
			responses().transactionAborted(this.request, this.response, this.match, this.keyHash);
			return;
		}
		try {
			claim.commit();
		}
		catch (RuntimeException ex) {
			responses().commitFailed(this.request, this.response, this.match, ex, this.keyHash);
			return;
		}
		buffered.release();
	}

	/**
	 * The handler returned an asynchronous result, refused before Spring MVC handed it to
	 * another thread. Its work in the transaction is rolled back, but a future or a
	 * deferred result it started may still be running elsewhere, out of reach: the key
	 * stays claimed until the lease ends, as after a crash, so that no retry runs beside
	 * that work.
	 */
	private void keepClaimForWorkElsewhere(HeldClaim claim) {
		claim.undoAndKeep();
		log.error("@Idempotent handler " + this.endpoint.name() + " returned an asynchronous result at run time;"
				+ " its work is rolled back and key " + this.keyHash + " stays claimed until its lease ends ("
				+ this.endpoint.lease() + ")");
	}

	/**
	 * The exception that Spring MVC resolved into the response, if any.
	 */
	private static @Nullable Throwable failure(HttpServletRequest request) {
		Object failure = request.getAttribute(DispatcherServlet.EXCEPTION_ATTRIBUTE);
		if (failure == null) {
			failure = request.getAttribute(WebUtils.ERROR_EXCEPTION_ATTRIBUTE);
		}
		return (failure instanceof Throwable throwable) ? throwable : null;
	}

	/**
	 * The refusal of a transactional method that the handler called to join the library's
	 * transaction, whose isolation level or read-only flag it does not accept, if that is
	 * how the handler failed.
	 */
	private static @Nullable IllegalTransactionStateException incompatibleTransaction(@Nullable Throwable failure) {
		Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
		for (Throwable cause = failure; cause != null && seen.add(cause); cause = cause.getCause()) {
			if (cause instanceof IllegalTransactionStateException incompatible) {
				return incompatible;
			}
		}
		return null;
	}

	/**
	 * Whether a failure came from within the handler method: its frame is on the stack of
	 * the exception or of one of its causes. Spring MVC offers no hook between resolving
	 * the arguments (and validating them) and calling the method, but what it throws
	 * before the call cannot have the method on its stack, and what the handler throws
	 * always has, whatever proxies and interceptors sit in between. An exception without
	 * a stack trace counts as thrown before the call: the key is then released rather
	 * than stored, the safe side, since the work is rolled back either way.
	 */
	private boolean ran(Throwable failure) {
		Method method = this.endpoint.endpoint().method();
		String type = method.getDeclaringClass().getName();
		Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
		for (Throwable cause = failure; cause != null && seen.add(cause); cause = cause.getCause()) {
			for (StackTraceElement frame : cause.getStackTrace()) {
				if (frame.getMethodName().equals(method.getName()) && frame.getClassName().equals(type)) {
					return true;
				}
			}
		}
		return false;
	}

	private StoredResponse capture(BufferedResponse buffered, int status) {
		Map<String, List<String>> headers = new LinkedHashMap<>();
		String contentType = buffered.getContentType();
		if (contentType != null) {
			headers.put(HttpHeaders.CONTENT_TYPE, List.of(contentType));
		}
		for (String name : this.settings.replayedHeaders()) {
			Collection<String> values = buffered.getHeaders(name);
			if (values != null && !values.isEmpty()) {
				headers.put(name, List.copyOf(values));
			}
		}
		int size = buffered.getBodySize();
		byte[] body;
		if (size > this.settings.maxStoredBodySize()) {
			// Not copied only to be dropped: it is sent from the buffer.
			headers.put(ProtocolResponses.BODY_OMITTED_HEADER, List.of(Integer.toString(size)));
			body = new byte[0];
		}
		else {
			body = buffered.getBody();
		}
		return this.settings.codec().seal(new StoredResponse(status, headers, body), this.scope, this.key);
	}

	ClaimResult claim() {
		return this.settings.metrics()
			.time(IdempotencyMetrics.Operation.CLAIM, IdempotencyMetrics.WEB, () -> store().claim(keyClaim()));
	}

	ClaimResult claim(Duration wait) {
		return this.settings.metrics()
			.time(IdempotencyMetrics.Operation.CLAIM, IdempotencyMetrics.WEB, () -> store().claim(keyClaim(), wait));
	}

	/**
	 * Claim the key in the business transaction, waiting at most {@code wait}, and set
	 * the store's savepoint after the claim in the same round trip.
	 */
	ClaimResult claimThenSavepoint(JdbcIdempotencyKeyStore store, Duration wait) {
		return this.settings.metrics()
			.time(IdempotencyMetrics.Operation.CLAIM, IdempotencyMetrics.WEB,
					() -> store.claimThenSavepoint(keyClaim(), wait));
	}

	Optional<String> takeOver() {
		return store().takeOver(this.scope, this.key, this.endpoint.lease());
	}

	Optional<IdempotencyRecord> find() {
		return store().find(this.scope, this.key);
	}

	PendingReleases.Claim releasable(String owner) {
		return new PendingReleases.Claim(this.scope, this.key, owner, this.endpoint.lease(), this.keyHash.toString());
	}

	private KeyClaim keyClaim() {
		return new KeyClaim(this.scope, this.key, this.fingerprint, this.endpoint.lease(), this.endpoint.retention());
	}

	Settings settings() {
		return this.settings;
	}

	EndpointSettings endpoint() {
		return this.endpoint;
	}

	String scope() {
		return this.scope;
	}

	String key() {
		return this.key;
	}

	KeyHash keyHash() {
		return this.keyHash;
	}

	HttpServletRequest request() {
		return this.request;
	}

	HttpServletResponse response() {
		return this.response;
	}

	IdempotentEndpoints.Match match() {
		return this.match;
	}

	IdempotencyKeyStore store() {
		return this.settings.store();
	}

	StoreTransactions transactions() {
		return this.settings.transactions();
	}

	PendingReleases releases() {
		return this.settings.releases();
	}

	ProtocolResponses responses() {
		return this.settings.responses();
	}

	/**
	 * What all requests of one filter share, built once when the application starts:
	 * where keys live, the transactions they run in, how long a duplicate waits, and what
	 * is kept of a response, and how.
	 */
	record Settings(IdempotencyKeyStore store, StoreTransactions transactions, PendingReleases releases,
			LocalClaims localClaims, IdempotencyMetrics metrics, ProtocolResponses responses, Duration lockTimeout,
			Duration lockAttemptTimeout, long maxStoredBodySize, long maxResponseSize, List<String> replayedHeaders,
			Collection<Integer> releasedClientErrors, StoredResponseCodec codec) {
	}

}
