package dev.idempotency.web;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.StoredResponse;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.Part;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.core.annotation.AnnotationAwareOrderComparator;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.Assert;
import org.springframework.util.StreamUtils;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.HandlerMapping;

/**
 * Serves the {@code Idempotency-Key} protocol for handler methods annotated with
 * {@link Idempotent @Idempotent}: validates the key, claims it, runs the handler in a
 * transaction owned by the filter (which the handler's own {@code @Transactional} work
 * joins), stores the response in that same transaction, and releases the response to the
 * client only after the commit. Repeats of a completed request get the stored response,
 * with the {@value #REPLAYED_HEADER} header.
 * <p>
 * Requests to other handlers pass through untouched. The filter finds the handler through
 * the application's {@link HandlerMapping}s, and checks every annotated method when the
 * application context starts.
 */
public class IdempotencyFilter extends OncePerRequestFilter
		implements ApplicationContextAware, SmartInitializingSingleton {

	/** The request header that carries the key. */
	public static final String KEY_HEADER = "Idempotency-Key";

	/** The response header that marks a replayed response. */
	public static final String REPLAYED_HEADER = "Idempotent-Replayed";

	/** The default lease of a two-phase claim. */
	public static final Duration DEFAULT_LEASE = Duration.ofMinutes(1);

	/** The default retention of a completed key. */
	public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);

	/** The default wait of a single-transaction duplicate. */
	public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(5);

	/** The default largest stored response body, in bytes. */
	public static final long DEFAULT_MAX_STORED_BODY_SIZE = 1024 * 1024;

	/**
	 * The default client errors that are not final: the claim is released so that a retry
	 * runs again.
	 */
	public static final Set<Integer> DEFAULT_RELEASED_CLIENT_ERRORS = Set.of(401, 403, 408, 423, 425, 429);

	/**
	 * A stored header that marks a response whose body was over the size cap; it is never
	 * sent to a client.
	 */
	static final String BODY_OMITTED_HEADER = "Idempotency-Body-Omitted";

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	private static final List<String> ALWAYS_REPLAYED = List.of(HttpHeaders.LOCATION, HttpHeaders.ETAG);

	private final IdempotencyKeyStore store;

	private final @Nullable PlatformTransactionManager transactionManager;

	private final @Nullable JdbcOperations jdbc;

	private IdempotencyScopeResolver scopeResolver = IdempotencyScopeResolver.principalOrGlobal();

	private IdempotencyMetrics metrics = IdempotencyMetrics.noop();

	private ClaimMode defaultMode = ClaimMode.TWO_PHASE;

	private Duration defaultLease = DEFAULT_LEASE;

	private Duration defaultRetention = DEFAULT_RETENTION;

	private Duration lockTimeout = DEFAULT_LOCK_TIMEOUT;

	private AbandonedClaimPolicy defaultAbandonedClaimPolicy = AbandonedClaimPolicy.TAKE_OVER;

	private long maxStoredBodySize = DEFAULT_MAX_STORED_BODY_SIZE;

	private List<String> replayedHeaders = ALWAYS_REPLAYED;

	private Set<Integer> releasedClientErrors = DEFAULT_RELEASED_CLIENT_ERRORS;

	private @Nullable Collection<? extends HandlerMapping> handlerMappings;

	private @Nullable ApplicationContext applicationContext;

	private volatile @Nullable IdempotentEndpoints endpoints;

	/**
	 * Create a filter.
	 * @param store where keys and responses are kept
	 * @param transactionManager the transaction manager of the store's database, in which
	 * the handlers run; when {@code null}, startup fails as soon as an
	 * {@code @Idempotent} handler exists
	 * @param jdbc JDBC access to the store's database, for the lock timeout of
	 * single-transaction claims; when {@code null}, startup fails as soon as a handler
	 * uses that mode
	 */
	public IdempotencyFilter(IdempotencyKeyStore store, @Nullable PlatformTransactionManager transactionManager,
			@Nullable JdbcOperations jdbc) {
		Assert.notNull(store, "store must not be null");
		this.store = store;
		this.transactionManager = transactionManager;
		this.jdbc = jdbc;
	}

	/**
	 * Set how the scope of a key is resolved. By default, the authenticated principal or
	 * the global scope.
	 * @param scopeResolver the resolver
	 */
	public void setScopeResolver(IdempotencyScopeResolver scopeResolver) {
		Assert.notNull(scopeResolver, "scopeResolver must not be null");
		this.scopeResolver = scopeResolver;
	}

	/**
	 * Set where outcomes (executed, replayed, in-progress conflict, fingerprint mismatch)
	 * and the timings of claims and replays are reported. By default, nowhere.
	 * @param metrics the metrics
	 */
	public void setMetrics(IdempotencyMetrics metrics) {
		Assert.notNull(metrics, "metrics must not be null");
		this.metrics = metrics;
	}

	/**
	 * Set the claim mode of handlers that do not choose one.
	 * @param defaultMode the mode
	 */
	public void setDefaultMode(ClaimMode defaultMode) {
		Assert.notNull(defaultMode, "defaultMode must not be null");
		this.defaultMode = defaultMode;
	}

	/**
	 * Set the lease of two-phase claims of handlers that do not choose one.
	 * @param defaultLease the lease
	 */
	public void setDefaultLease(Duration defaultLease) {
		Assert.isTrue(defaultLease != null && defaultLease.toMillis() > 0, "defaultLease must be positive");
		this.defaultLease = defaultLease;
	}

	/**
	 * Set how long completed keys are kept, for handlers that do not choose.
	 * @param defaultRetention the retention
	 */
	public void setDefaultRetention(Duration defaultRetention) {
		Assert.isTrue(defaultRetention != null && defaultRetention.toMillis() > 0, "defaultRetention must be positive");
		this.defaultRetention = defaultRetention;
	}

	/**
	 * Set how long a single-transaction duplicate waits for the first request before it
	 * gets 409.
	 * @param lockTimeout the longest wait
	 */
	public void setLockTimeout(Duration lockTimeout) {
		Assert.isTrue(lockTimeout != null && lockTimeout.toMillis() > 0, "lockTimeout must be positive");
		this.lockTimeout = lockTimeout;
	}

	/**
	 * Set what to do with an abandoned claim, for handlers that do not choose.
	 * @param policy the policy
	 */
	public void setDefaultAbandonedClaimPolicy(AbandonedClaimPolicy policy) {
		Assert.notNull(policy, "policy must not be null");
		this.defaultAbandonedClaimPolicy = policy;
	}

	/**
	 * Set the largest response body that is stored for replay. A larger response is still
	 * sent and its key completed, but repeats get a 409 problem instead of a replay.
	 * @param maxStoredBodySize the cap in bytes
	 */
	public void setMaxStoredBodySize(long maxStoredBodySize) {
		Assert.isTrue(maxStoredBodySize >= 0, "maxStoredBodySize must not be negative");
		this.maxStoredBodySize = maxStoredBodySize;
	}

	/**
	 * Set the headers replayed besides {@code Content-Type}, {@code Location} and
	 * {@code ETag}.
	 * @param headers the header names
	 */
	public void setReplayedHeaders(Collection<String> headers) {
		Assert.notNull(headers, "headers must not be null");
		Set<String> names = new LinkedHashSet<>(ALWAYS_REPLAYED);
		headers.stream()
			.filter((name) -> !HttpHeaders.CONTENT_TYPE.equalsIgnoreCase(name)
					&& !HttpHeaders.CONTENT_LENGTH.equalsIgnoreCase(name) && !REPLAYED_HEADER.equalsIgnoreCase(name))
			.forEach(names::add);
		this.replayedHeaders = List.copyOf(names);
	}

	/**
	 * Set the 4xx statuses that are not final: the transaction rolls back and the claim
	 * is released, so that a retry runs again. Every other 4xx is stored and replayed.
	 * @param statuses the statuses
	 */
	public void setReleasedClientErrors(Collection<Integer> statuses) {
		Assert.notNull(statuses, "statuses must not be null");
		statuses.forEach((status) -> Assert.isTrue(status != null && status >= 400 && status < 500,
				"released client errors must be 4xx statuses"));
		this.releasedClientErrors = Set.copyOf(statuses);
	}

	/**
	 * Set the handler mappings in which annotated handlers are found. By default, those
	 * of the application context.
	 * @param handlerMappings the handler mappings
	 */
	public void setHandlerMappings(Collection<? extends HandlerMapping> handlerMappings) {
		Assert.notNull(handlerMappings, "handlerMappings must not be null");
		this.handlerMappings = List.copyOf(handlerMappings);
		this.endpoints = null;
	}

	@Override
	public void setApplicationContext(ApplicationContext applicationContext) {
		this.applicationContext = applicationContext;
	}

	/**
	 * Find and check the annotated handlers, so that a misconfiguration fails the
	 * startup.
	 */
	@Override
	public void afterSingletonsInstantiated() {
		endpoints();
	}

	private IdempotentEndpoints endpoints() {
		IdempotentEndpoints endpoints = this.endpoints;
		if (endpoints == null) {
			synchronized (this) {
				endpoints = this.endpoints;
				if (endpoints == null) {
					endpoints = new IdempotentEndpoints(findHandlerMappings());
					check(endpoints);
					this.endpoints = endpoints;
				}
			}
		}
		return endpoints;
	}

	private Collection<? extends HandlerMapping> findHandlerMappings() {
		if (this.handlerMappings != null) {
			return this.handlerMappings;
		}
		if (this.applicationContext == null) {
			return List.of();
		}
		List<HandlerMapping> mappings = new ArrayList<>(BeanFactoryUtils
			.beansOfTypeIncludingAncestors(this.applicationContext, HandlerMapping.class, true, false)
			.values());
		AnnotationAwareOrderComparator.sort(mappings);
		return mappings;
	}

	private void check(IdempotentEndpoints endpoints) {
		if (endpoints.isEmpty()) {
			return;
		}
		IdempotentEndpoint first = endpoints.all().iterator().next();
		if (this.transactionManager == null) {
			throw new IllegalStateException("@Idempotent handler " + first.name()
					+ " needs a PlatformTransactionManager for the database of the idempotency keys, and there is"
					+ " none (or more than one). Define a single PlatformTransactionManager bean (Spring Boot creates"
					+ " one for a DataSource), or give one to the IdempotencyFilter.");
		}
		for (IdempotentEndpoint endpoint : endpoints.all()) {
			Duration lease = lease(endpoint);
			Duration retention = retention(endpoint);
			if (retention.compareTo(lease) <= 0) {
				throw new IllegalStateException(
						"@Idempotent handler " + endpoint.name() + " has a retention (" + retention
								+ ") that is not longer than its lease (" + lease + "); make the retention longer.");
			}
			if (mode(endpoint) == ClaimMode.SINGLE_TRANSACTION && this.jdbc == null) {
				throw new IllegalStateException("@Idempotent handler " + endpoint.name()
						+ " uses single-transaction claims, which need JDBC access to the key store's database."
						+ " Give a JdbcOperations to the IdempotencyFilter, or use two-phase claims.");
			}
		}
	}

	private ClaimMode mode(IdempotentEndpoint endpoint) {
		return (endpoint.mode() != null) ? endpoint.mode() : this.defaultMode;
	}

	private Duration lease(IdempotentEndpoint endpoint) {
		return (endpoint.lease() != null) ? endpoint.lease() : this.defaultLease;
	}

	private Duration retention(IdempotentEndpoint endpoint) {
		return (endpoint.retention() != null) ? endpoint.retention() : this.defaultRetention;
	}

	@Override
	protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
			throws ServletException, IOException {
		IdempotentEndpoints.Match match = endpoints().find(request);
		if (match == null) {
			chain.doFilter(request, response);
			return;
		}
		IdempotentEndpoint endpoint = match.endpoint();
		List<String> values = Collections.list(request.getHeaders(KEY_HEADER));
		if (values.isEmpty()) {
			if (!endpoint.required()) {
				chain.doFilter(request, response);
				return;
			}
			Problems.send(request, response, HttpStatus.BAD_REQUEST, IdempotencyProblemTypes.MISSING_KEY,
					"Missing Idempotency-Key", "This operation requires an Idempotency-Key header.", null);
			return;
		}
		if (values.size() > 1) {
			Problems.send(request, response, HttpStatus.BAD_REQUEST, IdempotencyProblemTypes.INVALID_KEY,
					"Invalid Idempotency-Key",
					"The Idempotency-Key header was sent " + values.size() + " times; send it exactly once.", null);
			return;
		}
		String key;
		try {
			key = IdempotencyKeys.parseHeader(values.get(0));
		}
		catch (InvalidIdempotencyKeyException ex) {
			Problems.send(request, response, HttpStatus.BAD_REQUEST, IdempotencyProblemTypes.INVALID_KEY,
					"Invalid Idempotency-Key", ex.getMessage() + ".", null);
			return;
		}
		String scope = this.scopeResolver.resolve(request);
		Assert.state(scope != null, "The scope resolver returned null");
		HttpServletRequest target = request;
		byte[] body;
		if (isForm(request.getContentType())) {
			body = formBody(request);
		}
		else {
			body = StreamUtils.copyToByteArray(request.getInputStream());
			target = new CachedBodyRequest(request, body);
		}
		String fingerprint = fingerprint(request, match.route(), endpoint, body);
		Attempt attempt = new Attempt(endpoint, scope, key, fingerprint, request, response);
		if (mode(endpoint) == ClaimMode.TWO_PHASE) {
			attempt.runTwoPhase(target, chain);
		}
		else {
			attempt.runSingleTransaction(target, chain);
		}
	}

	private static String fingerprint(HttpServletRequest request, String pattern, IdempotentEndpoint endpoint,
			byte[] body) {
		// The concrete path and query tell apart /orders/1/pay and /orders/2/pay, which
		// share a pattern; the pattern tells apart handlers that share a path.
		String query = request.getQueryString();
		String route = pattern + " " + request.getRequestURI() + ((query != null) ? "?" + query : "");
		String contentType = request.getContentType();
		try {
			return RequestFingerprint.of(request.getMethod(), route, contentType, body, endpoint.fingerprintFields());
		}
		catch (IllegalArgumentException ex) {
			// Not valid JSON: the handler will reject it; fingerprint the bytes as sent.
			return RequestFingerprint.of(request.getMethod(), route, null, body, List.of());
		}
	}

	private static boolean isForm(@Nullable String contentType) {
		if (contentType == null) {
			return false;
		}
		String type = contentType.toLowerCase(Locale.ROOT);
		return type.startsWith(MediaType.APPLICATION_FORM_URLENCODED_VALUE) || type.startsWith("multipart/");
	}

	/**
	 * The container parses form and multipart bodies itself (and Spring's
	 * {@code FormContentFilter} those of PUT and PATCH), so the body stream cannot be
	 * taken from it: the fingerprint covers the parsed parameters and parts instead.
	 */
	private static byte[] formBody(HttpServletRequest request) throws IOException, ServletException {
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		new TreeMap<>(request.getParameterMap()).forEach((name, values) -> {
			for (String value : values) {
				out.writeBytes((encode(name) + "=" + encode(value) + "&").getBytes(StandardCharsets.US_ASCII));
			}
		});
		String contentType = request.getContentType();
		if (contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith("multipart/")) {
			List<Part> parts = new ArrayList<>(request.getParts());
			parts.sort(Comparator.comparing(Part::getName));
			for (Part part : parts) {
				if (part.getSubmittedFileName() == null) {
					continue;
				}
				out.writeBytes(("\n" + encode(part.getName()) + ";" + encode(part.getSubmittedFileName()) + ";"
						+ part.getSize() + "\n")
					.getBytes(StandardCharsets.US_ASCII));
				try (InputStream in = part.getInputStream()) {
					in.transferTo(out);
				}
			}
		}
		return out.toByteArray();
	}

	private static String encode(String value) {
		return URLEncoder.encode(value, StandardCharsets.UTF_8);
	}

	private static boolean isLockTimeout(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLException sqlException && "55P03".equals(sqlException.getSQLState())) {
				return true;
			}
		}
		return false;
	}

	private static String hash(String scope, String key) {
		try {
			MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
			sha256.update(scope.getBytes(StandardCharsets.UTF_8));
			sha256.update((byte) 0);
			sha256.update(key.getBytes(StandardCharsets.UTF_8));
			return HexFormat.of().formatHex(sha256.digest(), 0, 8);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * One request under {@code @Idempotent}, from its claim to its answer.
	 */
	private final class Attempt {

		private final IdempotentEndpoint endpoint;

		private final String scope;

		private final String key;

		private final String fingerprint;

		private final HttpServletRequest request;

		private final HttpServletResponse response;

		private final ClaimMode mode;

		private final Duration lease;

		private final Duration retention;

		private final PlatformTransactionManager transactionManager;

		private final String keyHash;

		Attempt(IdempotentEndpoint endpoint, String scope, String key, String fingerprint, HttpServletRequest request,
				HttpServletResponse response) {
			this.endpoint = endpoint;
			this.scope = scope;
			this.key = key;
			this.fingerprint = fingerprint;
			this.request = request;
			this.response = response;
			this.mode = mode(endpoint);
			this.lease = lease(endpoint);
			this.retention = retention(endpoint);
			PlatformTransactionManager transactionManager = IdempotencyFilter.this.transactionManager;
			Assert.state(transactionManager != null, "No transaction manager");
			this.transactionManager = transactionManager;
			this.keyHash = hash(scope, key);
		}

		void runTwoPhase(HttpServletRequest target, FilterChain chain) throws ServletException, IOException {
			ClaimResult result = outside(() -> timedClaim());
			String owner = (result instanceof ClaimResult.Claimed claimed) ? claimed.owner()
					: settle(((ClaimResult.Existing) result).record());
			if (owner == null) {
				return;
			}
			TransactionStatus transaction = this.transactionManager.getTransaction(business());
			try {
				execute(transaction, owner, target, chain);
			}
			finally {
				if (!transaction.isCompleted()) {
					this.transactionManager.rollback(transaction);
					release(owner);
				}
			}
		}

		void runSingleTransaction(HttpServletRequest target, FilterChain chain) throws ServletException, IOException {
			TransactionStatus transaction = this.transactionManager.getTransaction(business());
			try {
				String owner = claimInTransaction();
				if (owner != null) {
					execute(transaction, owner, target, chain);
				}
			}
			finally {
				if (!transaction.isCompleted()) {
					this.transactionManager.rollback(transaction);
				}
			}
		}

		private @Nullable String claimInTransaction() throws IOException {
			JdbcOperations jdbc = IdempotencyFilter.this.jdbc;
			Assert.state(jdbc != null, "No JdbcOperations");
			jdbc.execute("SET LOCAL lock_timeout = " + IdempotencyFilter.this.lockTimeout.toMillis());
			ClaimResult result;
			try {
				result = timedClaim();
			}
			catch (RuntimeException ex) {
				if (!isLockTimeout(ex)) {
					throw ex;
				}
				log.debug("Key " + this.keyHash + " still held after the lock timeout");
				keyInUse(Duration.ofSeconds(1));
				return null;
			}
			jdbc.execute("SET LOCAL lock_timeout TO DEFAULT");
			return (result instanceof ClaimResult.Claimed claimed) ? claimed.owner()
					: settle(((ClaimResult.Existing) result).record());
		}

		/**
		 * Answer a request whose key already has a record, or take an abandoned claim
		 * over.
		 * @return the owner token after a take-over; {@code null} when answered
		 */
		private @Nullable String settle(IdempotencyRecord record) throws IOException {
			if (!record.matches(this.fingerprint)) {
				IdempotencyFilter.this.metrics.fingerprintMismatch(IdempotencyMetrics.WEB);
				log.debug("Key " + this.keyHash + " reused with a different request");
				Problems.send(this.request, this.response, HttpStatus.UNPROCESSABLE_CONTENT,
						IdempotencyProblemTypes.KEY_REUSED, "Idempotency-Key reused",
						"This Idempotency-Key was already used for a different request (method, path or body)."
								+ " Send a new key for a new request.",
						null);
				return null;
			}
			if (record.status() == IdempotencyRecord.Status.DONE) {
				replay(record);
				return null;
			}
			if (!record.isLeaseExpired()) {
				keyInUse(record.remainingLease());
				return null;
			}
			AbandonedClaimPolicy policy = (this.endpoint.abandoned() != null) ? this.endpoint.abandoned()
					: IdempotencyFilter.this.defaultAbandonedClaimPolicy;
			if (policy == AbandonedClaimPolicy.REFUSE) {
				log.warn("Key " + this.keyHash + " was abandoned by the request that claimed it; refusing to run it"
						+ " again until it is reviewed");
				Problems.send(this.request, this.response, HttpStatus.CONFLICT, IdempotencyProblemTypes.ABANDONED_CLAIM,
						"Request abandoned",
						"A request with this Idempotency-Key started but did not finish in time. It must be reviewed"
								+ " before it is retried.",
						null);
				return null;
			}
			Optional<String> owner = inClaimTransaction(
					() -> IdempotencyFilter.this.store.takeOver(this.scope, this.key, this.lease));
			if (owner.isPresent()) {
				log.info("Key " + this.keyHash + " was abandoned by the request that claimed it; taking it over");
				return owner.get();
			}
			Optional<IdempotencyRecord> now = inClaimTransaction(
					() -> IdempotencyFilter.this.store.find(this.scope, this.key));
			if (now.isPresent() && now.get().status() == IdempotencyRecord.Status.DONE
					&& now.get().matches(this.fingerprint)) {
				replay(now.get());
			}
			else {
				keyInUse(Duration.ofSeconds(1));
			}
			return null;
		}

		private void execute(TransactionStatus transaction, String owner, HttpServletRequest target, FilterChain chain)
				throws ServletException, IOException {
			BufferedResponse buffered = new BufferedResponse(this.response);
			IdempotencyFilter.this.metrics.executed(IdempotencyMetrics.WEB);
			try {
				chain.doFilter(target, buffered);
				if (target.isAsyncStarted()) {
					throw new IllegalStateException("@Idempotent handler " + this.endpoint.name()
							+ " started asynchronous processing, which cannot be held until the commit");
				}
			}
			catch (ServletException | IOException | RuntimeException | Error ex) {
				if (!this.response.isCommitted()) {
					this.response.reset();
				}
				throw ex;
			}
			int status = buffered.getStatus();
			if (status >= 500 || IdempotencyFilter.this.releasedClientErrors.contains(status)) {
				this.transactionManager.rollback(transaction);
				release(owner);
				log.debug("Key " + this.keyHash + " released after status " + status);
				buffered.release();
				return;
			}
			if (buffered.getErrorStatus() != null) {
				buffered.renderError(Problems.CONTENT_TYPE,
						Problems.body(this.request, status, null, Problems.title(status), null));
			}
			StoredResponse stored = capture(buffered, status);
			// An exception resolved into a response (by @ExceptionHandler or a
			// HandlerExceptionResolver) means the handler failed: its work is rolled
			// back and only the decided outcome is kept.
			boolean handlerFailed = target.getAttribute(DispatcherServlet.EXCEPTION_ATTRIBUTE) != null;
			if (handlerFailed || transaction.isRollbackOnly()) {
				this.transactionManager.rollback(transaction);
				if (handlerFailed || status >= 400) {
					storeAfterRollback(owner, stored);
					buffered.release();
				}
				else {
					release(owner);
					commitFailed(null);
				}
				return;
			}
			if (!IdempotencyFilter.this.store.complete(this.scope, this.key, owner, stored, this.retention)) {
				this.transactionManager.rollback(transaction);
				log.warn("Key " + this.keyHash + " was taken over by another request while this one ran;"
						+ " its work is rolled back");
				Problems.send(this.request, this.response, HttpStatus.CONFLICT, IdempotencyProblemTypes.CLAIM_LOST,
						"Claim lost",
						"This request ran longer than its lease and another request with the same Idempotency-Key"
								+ " took over; this request's work was rolled back.",
						null);
				return;
			}
			try {
				this.transactionManager.commit(transaction);
			}
			catch (RuntimeException ex) {
				release(owner);
				commitFailed(ex);
				return;
			}
			buffered.release();
		}

		private StoredResponse capture(BufferedResponse buffered, int status) {
			byte[] body = buffered.getBody();
			Map<String, List<String>> headers = new LinkedHashMap<>();
			String contentType = buffered.getContentType();
			if (contentType != null) {
				headers.put(HttpHeaders.CONTENT_TYPE, List.of(contentType));
			}
			for (String name : IdempotencyFilter.this.replayedHeaders) {
				Collection<String> values = buffered.getHeaders(name);
				if (values != null && !values.isEmpty()) {
					headers.put(name, List.copyOf(values));
				}
			}
			if (body.length > IdempotencyFilter.this.maxStoredBodySize) {
				headers.put(BODY_OMITTED_HEADER, List.of(Integer.toString(body.length)));
				body = new byte[0];
			}
			return new StoredResponse(status, headers, body);
		}

		private void storeAfterRollback(String owner, StoredResponse stored) {
			try {
				if (this.mode == ClaimMode.TWO_PHASE) {
					outside(() -> IdempotencyFilter.this.store.complete(this.scope, this.key, owner, stored,
							this.retention));
				}
				else {
					TransactionTemplate template = new TransactionTemplate(this.transactionManager, business());
					template.executeWithoutResult((status) -> {
						if (IdempotencyFilter.this.store.claim(claim()) instanceof ClaimResult.Claimed claimed) {
							IdempotencyFilter.this.store.complete(this.scope, this.key, claimed.owner(), stored,
									this.retention);
						}
					});
				}
			}
			catch (RuntimeException ex) {
				log.warn("Could not store the client error of key " + this.keyHash + "; a retry will run again", ex);
			}
		}

		private void replay(IdempotencyRecord record) throws IOException {
			IdempotencyMetrics.Timing timing = IdempotencyFilter.this.metrics.start(IdempotencyMetrics.Operation.REPLAY,
					IdempotencyMetrics.WEB);
			try {
				writeReplay(record);
			}
			catch (IOException | RuntimeException | Error ex) {
				timing.stop(ex);
				throw ex;
			}
			timing.stop();
		}

		private void writeReplay(IdempotencyRecord record) throws IOException {
			StoredResponse stored = record.response();
			Assert.state(stored != null, "A DONE record has a response");
			List<String> omitted = stored.headers().get(BODY_OMITTED_HEADER);
			if (omitted != null) {
				Problems.send(this.request, this.response, HttpStatus.CONFLICT,
						IdempotencyProblemTypes.RESPONSE_NOT_STORED, "Response not stored",
						"A request with this Idempotency-Key was already done (status " + stored.status()
								+ "), but its response of " + omitted.get(0)
								+ " bytes was over the storage limit and cannot be replayed.",
						null);
				return;
			}
			IdempotencyFilter.this.metrics.replayed(IdempotencyMetrics.WEB);
			log.debug("Key " + this.keyHash + " replayed");
			this.response.setStatus(stored.status());
			stored.headers().forEach((name, values) -> {
				if (HttpHeaders.CONTENT_TYPE.equalsIgnoreCase(name)) {
					this.response.setContentType(values.get(0));
				}
				else {
					values.forEach((value) -> this.response.addHeader(name, value));
				}
			});
			this.response.setHeader(REPLAYED_HEADER, "true");
			byte[] body = stored.body();
			this.response.setContentLength(body.length);
			if (body.length > 0) {
				this.response.getOutputStream().write(body);
			}
			this.response.flushBuffer();
		}

		private void keyInUse(Duration retryAfter) throws IOException {
			IdempotencyFilter.this.metrics.inProgressConflict(IdempotencyMetrics.WEB);
			log.debug("Key " + this.keyHash + " is in use");
			Problems.send(this.request, this.response, HttpStatus.CONFLICT, IdempotencyProblemTypes.KEY_IN_USE,
					"Request in progress",
					"A request with this Idempotency-Key is still being processed. Retry after it completes.",
					retryAfter);
		}

		private void commitFailed(@Nullable Exception ex) throws IOException {
			log.warn("The transaction of key " + this.keyHash + " did not commit; nothing was done", ex);
			Problems.send(this.request, this.response, HttpStatus.INTERNAL_SERVER_ERROR,
					IdempotencyProblemTypes.COMMIT_FAILED, "Not committed",
					"The operation could not be committed and nothing was done. Retry with the same Idempotency-Key.",
					null);
		}

		private void release(String owner) {
			if (this.mode != ClaimMode.TWO_PHASE) {
				// The claim was part of the rolled-back transaction.
				return;
			}
			try {
				outside(() -> IdempotencyFilter.this.store.release(this.scope, this.key, owner));
			}
			catch (RuntimeException ex) {
				log.warn("Could not release key " + this.keyHash + "; a retry can run once its lease expires", ex);
			}
		}

		private ClaimResult timedClaim() {
			return IdempotencyFilter.this.metrics.time(IdempotencyMetrics.Operation.CLAIM, IdempotencyMetrics.WEB,
					() -> IdempotencyFilter.this.store.claim(claim()));
		}

		private KeyClaim claim() {
			return new KeyClaim(this.scope, this.key, this.fingerprint, this.lease, this.retention);
		}

		private <T> T inClaimTransaction(Supplier<T> action) {
			return (this.mode == ClaimMode.TWO_PHASE) ? outside(action) : action.get();
		}

		private <T> T outside(Supplier<T> action) {
			DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
					TransactionDefinition.PROPAGATION_NOT_SUPPORTED);
			T result = new TransactionTemplate(this.transactionManager, definition).execute((status) -> action.get());
			Assert.state(result != null, "No result");
			return result;
		}

		private TransactionDefinition business() {
			DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
					TransactionDefinition.PROPAGATION_REQUIRES_NEW);
			definition.setName("@Idempotent " + this.endpoint.name());
			return definition;
		}

	}

}
