package dev.idempotency.web;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import dev.idempotency.core.FingerprintLimitExceededException;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterChain;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.core.annotation.AnnotationAwareOrderComparator;
import org.springframework.http.HttpHeaders;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.util.Assert;
import org.springframework.util.StringValueResolver;
import org.springframework.web.filter.GenericFilterBean;
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
 * application context starts. Register it for the {@code REQUEST}, {@code FORWARD},
 * {@code INCLUDE} and {@code ASYNC} dispatcher types: a forward or an asynchronous
 * dispatch to an {@code @Idempotent} handler gets the protocol like a request, unless it
 * happens within a request that already has it; an include of one is refused, since an
 * included response cannot be replayed; an error dispatch, which renders the outcome of
 * the request it belongs to, never gets the protocol.
 * <p>
 * The filter reads its settings once, when it checks the handlers: set them before the
 * application context starts.
 *
 * @since 0.1.0
 */
public class IdempotencyFilter extends GenericFilterBean
		implements ApplicationContextAware, SmartInitializingSingleton {

	// The filter holds the configuration and reads what identifies a request; the parts,
	// package-private, each do one thing:
	// - IdempotentEndpoints: which @Idempotent handler serves a request (checked at
	// startup)
	// - HandlerTransactions: the transaction of each handler, from its @Transactional
	// - RequestBodies: the body, read once, within its limit
	// - RequestFingerprints: the fingerprint of method, route, query, media type and body
	// - IdempotentExecution: claim, run in the transaction, complete, release
	// - TwoPhaseClaim, SingleTransactionClaim: how each claim mode holds a key and gives
	// it back, with PendingReleases and LocalClaims
	// - StoreTransactions: the transactions, on the transaction manager of the keys
	// - IdempotentRequest, BufferedResponse: what the handler reads and writes meanwhile
	// - ProtocolResponses: replays and problem details, which Problems renders through
	// the application's exception handlers and message converters

	/** The request header that carries the key. */
	public static final String KEY_HEADER = "Idempotency-Key";

	/** The response header that marks a replayed response. */
	public static final String REPLAYED_HEADER = ProtocolResponses.REPLAYED_HEADER;

	/** The default lease of a two-phase claim. */
	public static final Duration DEFAULT_LEASE = Duration.ofMinutes(1);

	/** The default retention of a completed key. */
	public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);

	/** The default wait of a single-transaction duplicate. */
	public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(5);

	/**
	 * The default longest time a waiting single-transaction duplicate holds a connection
	 * at a time.
	 */
	public static final Duration DEFAULT_LOCK_ATTEMPT_TIMEOUT = Duration.ofMillis(200);

	/**
	 * The default longest wait that a {@code Retry-After} header of a 409 for a running
	 * request asks for.
	 */
	public static final Duration DEFAULT_MAX_RETRY_AFTER = Duration.ofSeconds(5);

	/**
	 * The default wait of a two-phase duplicate for the request that holds its key: none,
	 * it gets 409 at once.
	 */
	public static final Duration DEFAULT_WAIT_FOR = Duration.ZERO;

	/** The default largest number of releases that wait for the database at once. */
	public static final int DEFAULT_MAX_PENDING_RELEASES = 10_000;

	/** The default largest stored response body, in bytes. */
	public static final long DEFAULT_MAX_STORED_BODY_SIZE = 1024 * 1024;

	/** The default largest request body read into memory, in bytes. */
	public static final long DEFAULT_MAX_REQUEST_BODY_SIZE = 1024 * 1024;

	/** The default largest response held in memory until the commit, in bytes. */
	public static final long DEFAULT_MAX_RESPONSE_SIZE = 4 * 1024 * 1024;

	/** The largest limit of a body held in memory: the largest byte array. */
	private static final long MAX_BUFFER = Integer.MAX_VALUE - 8;

	/**
	 * The default client errors that are not final: the claim is released so that a retry
	 * runs again.
	 */
	public static final Set<Integer> DEFAULT_RELEASED_CLIENT_ERRORS = Set.of(401, 403, 408, 423, 425, 429);

	/**
	 * Replayed with every stored response: the headers that say what its bytes are
	 * (representation metadata and validators) and where it points.
	 */
	private static final List<String> ALWAYS_REPLAYED = List.of(HttpHeaders.CONTENT_ENCODING,
			HttpHeaders.CONTENT_LANGUAGE, HttpHeaders.CONTENT_LOCATION, HttpHeaders.CONTENT_DISPOSITION,
			HttpHeaders.CONTENT_RANGE, "Content-Digest", "Repr-Digest", HttpHeaders.LOCATION, HttpHeaders.ETAG,
			HttpHeaders.LAST_MODIFIED);

	/**
	 * The response headers that carry credentials or challenges for them: never stored,
	 * so never replayed, unless named in {@link #setStoredCredentialHeaders}. The first
	 * response still carries them to its client.
	 */
	public static final List<String> CREDENTIAL_HEADERS = List.of(HttpHeaders.SET_COOKIE, "Set-Cookie2",
			HttpHeaders.AUTHORIZATION, HttpHeaders.PROXY_AUTHORIZATION, HttpHeaders.WWW_AUTHENTICATE,
			"Proxy-Authenticate", "Authentication-Info", "Proxy-Authentication-Info");

	/**
	 * The request attribute that marks a request under the protocol, so that a dispatch
	 * within it (a forward of its handler) does not claim again.
	 */
	private static final String EXECUTING_ATTRIBUTE = IdempotencyFilter.class.getName() + ".EXECUTING";

	private final IdempotencyKeyStore store;

	private final @Nullable DataSource dataSource;

	private @Nullable PlatformTransactionManager transactionManager;

	private @Nullable String transactionManagerName;

	private IdempotencyScopeResolver scopeResolver = IdempotencyScopeResolver.principalOrGlobal();

	private IdempotencyMetrics metrics = IdempotencyMetrics.noop();

	private ClaimMode defaultMode = ClaimMode.TWO_PHASE;

	private Duration defaultLease = DEFAULT_LEASE;

	private Duration defaultRetention = DEFAULT_RETENTION;

	private Duration lockTimeout = DEFAULT_LOCK_TIMEOUT;

	private Duration lockAttemptTimeout = DEFAULT_LOCK_ATTEMPT_TIMEOUT;

	private int maxPendingReleases = DEFAULT_MAX_PENDING_RELEASES;

	private Duration maxRetryAfter = DEFAULT_MAX_RETRY_AFTER;

	private Duration defaultWaitFor = DEFAULT_WAIT_FOR;

	private boolean validateExistingTransactions = true;

	private AbandonedClaimPolicy defaultAbandonedClaimPolicy = AbandonedClaimPolicy.TAKE_OVER;

	private long maxStoredBodySize = DEFAULT_MAX_STORED_BODY_SIZE;

	private long maxRequestBodySize = DEFAULT_MAX_REQUEST_BODY_SIZE;

	private long maxResponseSize = DEFAULT_MAX_RESPONSE_SIZE;

	private List<String> replayedHeaders = ALWAYS_REPLAYED;

	private List<String> storedCredentialHeaders = List.of();

	private @Nullable StoredResponseEncryptor storedResponseEncryptor;

	private Set<Integer> releasedClientErrors = DEFAULT_RELEASED_CLIENT_ERRORS;

	private @Nullable Collection<? extends HandlerMapping> handlerMappings;

	private @Nullable ApplicationContext applicationContext;

	private volatile @Nullable Prepared prepared;

	/**
	 * Create a filter.
	 * @param store where keys and responses are kept
	 * @param transactionManager the transaction manager of the store's
	 * {@code DataSource}, in which the handlers run; when {@code null}, the one of the
	 * application context that manages that {@code DataSource} (see
	 * {@link #setTransactionManagerName})
	 * @param dataSource the {@code DataSource} of the store; when {@code null}, that of a
	 * {@link JdbcIdempotencyKeyStore}
	 */
	public IdempotencyFilter(IdempotencyKeyStore store, @Nullable PlatformTransactionManager transactionManager,
			@Nullable DataSource dataSource) {
		Assert.notNull(store, "store must not be null");
		this.store = store;
		this.transactionManager = transactionManager;
		this.dataSource = dataSource;
	}

	/**
	 * Set the name of the transaction manager bean that the handlers run in, when the
	 * filter was given none and several transaction managers manage the store's
	 * {@code DataSource}. By default, the only one that does (or the primary one among
	 * them). Startup fails when the named one does not manage it.
	 * @param transactionManagerName the bean name, or {@code null}
	 */
	public void setTransactionManagerName(@Nullable String transactionManagerName) {
		this.transactionManagerName = transactionManagerName;
		reset();
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
	 * Set how long a waiting single-transaction duplicate may hold a database connection
	 * at a time, while the request it waits for runs on another instance. Past it, the
	 * duplicate gives its connection back and tries again, until the lock timeout has
	 * passed. A duplicate of a request of the same instance waits holding none.
	 * @param lockAttemptTimeout the longest wait on the database at a time
	 */
	public void setLockAttemptTimeout(Duration lockAttemptTimeout) {
		Assert.isTrue(lockAttemptTimeout != null && lockAttemptTimeout.toMillis() > 0,
				"lockAttemptTimeout must be positive");
		this.lockAttemptTimeout = lockAttemptTimeout;
	}

	/**
	 * Set the longest wait that the {@code Retry-After} header of a 409 for a running
	 * request asks for. The header says the rest of the running request's lease, or this
	 * cap when it is shorter, in whole seconds (the lease's rounded up, the cap's rounded
	 * down): a lease is sized for the slowest run and for a crash, so that the rest of it
	 * is far longer than the usual run.
	 * @param maxRetryAfter the cap, at least one second
	 */
	public void setMaxRetryAfter(Duration maxRetryAfter) {
		Assert.isTrue(maxRetryAfter != null && maxRetryAfter.compareTo(Duration.ofSeconds(1)) >= 0,
				"maxRetryAfter must be at least one second");
		this.maxRetryAfter = maxRetryAfter;
	}

	/**
	 * Set how long a two-phase duplicate that finds its key in progress waits for the
	 * request that holds it, for handlers that do not choose (see
	 * {@link Idempotent#waitFor()}). By default it does not wait: it gets 409 at once.
	 * Single-transaction duplicates wait for the lock timeout instead.
	 * @param defaultWaitFor the longest wait, zero for none
	 */
	public void setDefaultWaitFor(Duration defaultWaitFor) {
		Assert.isTrue(defaultWaitFor != null && !defaultWaitFor.isNegative(), "defaultWaitFor must not be negative");
		this.defaultWaitFor = defaultWaitFor;
	}

	/**
	 * Set how many releases of two-phase claims may wait at once for the database to
	 * answer again. Past it, the claim of a failed request stays until its lease ends.
	 * @param maxPendingReleases the largest number of waiting releases
	 */
	public void setMaxPendingReleases(int maxPendingReleases) {
		Assert.isTrue(maxPendingReleases >= 0, "maxPendingReleases must not be negative");
		this.maxPendingReleases = maxPendingReleases;
	}

	/**
	 * Set whether the transaction manager that the handlers run in refuses a
	 * transactional method that joins a handler's transaction with an isolation level or
	 * a read-only flag it does not have, rather than running it silently with those of
	 * the handler's transaction. By default it does: the filter sets
	 * {@link AbstractPlatformTransactionManager#setValidateExistingTransaction} on it,
	 * for the whole application.
	 * @param validateExistingTransactions whether to validate joining transactions
	 */
	public void setValidateExistingTransactions(boolean validateExistingTransactions) {
		this.validateExistingTransactions = validateExistingTransactions;
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
	 * Set the largest request body that is read into memory for the fingerprint. A
	 * request with a larger body gets a 413 problem, before its key is claimed, whatever
	 * its media type. Multipart bodies, and forms that the servlet container parses
	 * (Tomcat, for POST) or Spring's {@code FormContentFilter} parses (PUT, PATCH), are
	 * parsed under their limits, and uploaded files are never held in memory by the
	 * filter.
	 * @param maxRequestBodySize the limit in bytes
	 */
	public void setMaxRequestBodySize(long maxRequestBodySize) {
		Assert.isTrue(maxRequestBodySize >= 0 && maxRequestBodySize <= MAX_BUFFER,
				"maxRequestBodySize must be between 0 and " + MAX_BUFFER);
		this.maxRequestBodySize = maxRequestBodySize;
	}

	/**
	 * Set the largest response that is held in memory until the transaction commits. A
	 * handler whose response is larger has its work rolled back and its key released, and
	 * the client gets a 500 problem: a response can neither be held past the limit nor
	 * sent before the commit.
	 * @param maxResponseSize the limit in bytes
	 */
	public void setMaxResponseSize(long maxResponseSize) {
		Assert.isTrue(maxResponseSize >= 0 && maxResponseSize <= MAX_BUFFER,
				"maxResponseSize must be between 0 and " + MAX_BUFFER);
		this.maxResponseSize = maxResponseSize;
	}

	/**
	 * Set the headers replayed besides {@code Content-Type}, the other representation
	 * headers ({@code Content-Encoding}, {@code Content-Language},
	 * {@code Content-Location}, {@code Content-Disposition}, {@code Content-Range},
	 * {@code Content-Digest}, {@code Repr-Digest}), {@code Location}, {@code ETag} and
	 * {@code Last-Modified}. A credential header ({@link #CREDENTIAL_HEADERS}) is named
	 * in {@link #setStoredCredentialHeaders} instead.
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
	 * Set the credential headers (among {@link #CREDENTIAL_HEADERS}) that are stored and
	 * replayed, deliberately: a replay then hands the cookie or credential of the first
	 * response to whoever repeats the request with its key and scope. By default, none: a
	 * credential header is sent to the first client only. A credential header named in
	 * {@link #setReplayedHeaders} without being named here fails the startup.
	 * @param headers the header names
	 */
	public void setStoredCredentialHeaders(Collection<String> headers) {
		Assert.notNull(headers, "headers must not be null");
		List<String> names = new ArrayList<>();
		for (String name : headers) {
			Assert.isTrue(isCredentialHeader(name), () -> "'" + name + "' is no credential header; the stored"
					+ " credential headers are among " + CREDENTIAL_HEADERS);
			names.add(name);
		}
		this.storedCredentialHeaders = List.copyOf(names);
	}

	private static boolean isCredentialHeader(String name) {
		return CREDENTIAL_HEADERS.stream().anyMatch(name::equalsIgnoreCase);
	}

	/**
	 * Set how stored responses are encrypted at rest. By default they are stored as they
	 * were sent. Responses stored before an encryptor was set are still replayed;
	 * encrypted responses that the encryptor cannot decrypt (their key is gone), or that
	 * are found without an encryptor, are answered with a 500 problem and never run
	 * again.
	 * @param encryptor the encryptor, or {@code null} for none
	 */
	public void setStoredResponseEncryptor(@Nullable StoredResponseEncryptor encryptor) {
		this.storedResponseEncryptor = encryptor;
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
		reset();
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
		prepared();
	}

	/**
	 * Stop retrying the releases that still wait for the database.
	 */
	@Override
	public void destroy() {
		reset();
	}

	private synchronized void reset() {
		Prepared prepared = this.prepared;
		this.prepared = null;
		if (prepared != null && prepared.settings() != null) {
			prepared.settings().releases().close();
		}
	}

	private Prepared prepared() {
		Prepared prepared = this.prepared;
		if (prepared == null) {
			synchronized (this) {
				prepared = this.prepared;
				if (prepared == null) {
					prepared = prepare(new IdempotentEndpoints(findHandlerMappings(), placeholders()));
					this.prepared = prepared;
				}
			}
		}
		return prepared;
	}

	private StringValueResolver placeholders() {
		ApplicationContext context = this.applicationContext;
		return (context != null) ? context.getEnvironment()::resolveRequiredPlaceholders : (text) -> text;
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

	/**
	 * Check the handlers and settle everything their requests share.
	 */
	private Prepared prepare(IdempotentEndpoints endpoints) {
		List<String> replayedHeaders = replayedHeaders();
		if (endpoints.isEmpty()) {
			return new Prepared(endpoints, null, Map.of());
		}
		IdempotentEndpoint first = endpoints.all().iterator().next();
		DataSource keys = (this.dataSource != null) ? this.dataSource
				: (this.store instanceof JdbcIdempotencyKeyStore jdbcStore) ? jdbcStore.getDataSource() : null;
		if (keys == null) {
			throw new IdempotencyConfigurationException("@Idempotent handler " + first.name()
					+ " must run in a transaction of the DataSource of the idempotency keys, and the filter cannot"
					+ " tell which DataSource that is: the key store is no JdbcIdempotencyKeyStore.",
					"Give the DataSource of the key store to the IdempotencyFilter.");
		}
		PlatformTransactionManager transactionManager = StoreTransactions.find(this.transactionManager,
				this.transactionManagerName, keys, this.applicationContext, first.name());
		this.transactionManager = transactionManager;
		HandlerTransactions handlerTransactions = new HandlerTransactions(this.applicationContext);
		// By identity: the endpoints of a match are these instances, and a record's
		// hashCode would hash all of its components on every request.
		Map<IdempotentEndpoint, EndpointSettings> settings = new IdentityHashMap<>();
		for (IdempotentEndpoint endpoint : endpoints.all()) {
			settings.put(endpoint,
					endpointSettings(endpoint, handlerTransactions.definition(endpoint, transactionManager)));
		}
		validateExistingTransactions(transactionManager);
		logSharedAnonymousScope(endpoints);
		StoreTransactions transactions = new StoreTransactions(transactionManager, keys);
		StoredResponseCodec codec = new StoredResponseCodec(this.storedResponseEncryptor);
		return new Prepared(endpoints, new IdempotentExecution.Settings(this.store, transactions,
				new PendingReleases(this.store, transactions, this.maxPendingReleases), new LocalClaims(), this.metrics,
				new ProtocolResponses(this.metrics, Problems.of(this.applicationContext), codec, this.maxRetryAfter),
				this.lockTimeout, this.lockAttemptTimeout, this.maxStoredBodySize, this.maxResponseSize,
				replayedHeaders, this.releasedClientErrors, codec), Collections.unmodifiableMap(settings));
	}

	/**
	 * The replayed headers with the credential headers chosen to be stored; a credential
	 * header among the replayed headers alone is a mistake, refused.
	 */
	private List<String> replayedHeaders() {
		List<String> unchosen = this.replayedHeaders.stream()
			.filter(IdempotencyFilter::isCredentialHeader)
			.filter((name) -> this.storedCredentialHeaders.stream().noneMatch(name::equalsIgnoreCase))
			.toList();
		if (!unchosen.isEmpty()) {
			throw new IdempotencyConfigurationException("The replayed headers name " + unchosen
					+ ", which carry credentials: a replay would hand them to whoever repeats the request with its"
					+ " key.",
					"Remove them from idempotency.web.replayed-headers"
							+ " (IdempotencyFilter#setReplayedHeaders), or, to store and replay them deliberately,"
							+ " name them in idempotency.web.stored-credential-headers"
							+ " (IdempotencyFilter#setStoredCredentialHeaders).");
		}
		Set<String> names = new LinkedHashSet<>(this.replayedHeaders);
		names.addAll(this.storedCredentialHeaders);
		return List.copyOf(names);
	}

	private EndpointSettings endpointSettings(IdempotentEndpoint endpoint, TransactionDefinition transaction) {
		Duration lease = (endpoint.lease() != null) ? endpoint.lease() : this.defaultLease;
		Duration retention = (endpoint.retention() != null) ? endpoint.retention() : this.defaultRetention;
		if (retention.compareTo(lease) <= 0) {
			throw new IdempotencyConfigurationException(
					"@Idempotent handler " + endpoint.name() + " has a retention (" + retention
							+ ") that is not longer than its lease (" + lease + "); its key could be deleted"
							+ " while its claim is live.",
					"Make the retention longer, with @Idempotent(retention = \"...\") or idempotency.web.retention,"
							+ " or the lease shorter.");
		}
		ClaimMode mode = (endpoint.mode() != null) ? endpoint.mode() : this.defaultMode;
		Duration waitFor = (endpoint.waitFor() != null) ? endpoint.waitFor() : this.defaultWaitFor;
		if (mode == ClaimMode.SINGLE_TRANSACTION) {
			if (endpoint.waitFor() != null && !endpoint.waitFor().isZero()) {
				throw new IdempotencyConfigurationException(
						"@Idempotent handler " + endpoint.name()
								+ " claims its key in a single transaction and names a waitFor (" + endpoint.waitFor()
								+ "), which only two-phase handlers have: a single-transaction duplicate waits for the"
								+ " lock timeout.",
						"Remove waitFor from the annotation and set"
								+ " idempotency.web.lock-timeout (IdempotencyFilter#setLockTimeout), or claim the"
								+ " key in two phases (mode = TWO_PHASE).");
			}
			waitFor = Duration.ZERO;
		}
		return new EndpointSettings(endpoint, mode, lease, retention,
				(endpoint.abandoned() != null) ? endpoint.abandoned() : this.defaultAbandonedClaimPolicy, transaction,
				waitFor);
	}

	/**
	 * The default resolver gives every request without a principal the global scope: two
	 * anonymous clients that happen to send the same key share one operation, and the
	 * second gets the first's response. That is right for a key meant as one operation
	 * whoever sends it, and a leak otherwise, so it is said once, where the handlers are
	 * known.
	 */
	private void logSharedAnonymousScope(IdempotentEndpoints endpoints) {
		if (this.scopeResolver == PrincipalScopeResolver.INSTANCE && logger.isInfoEnabled()) {
			logger.info(endpoints.all().size() + " @Idempotent handler(s) scope their keys by the authenticated"
					+ " principal only: requests without one (anonymous clients) share one key space, and a client"
					+ " that sends another's key gets that client's response. Declare an IdempotencyScopeResolver"
					+ " bean that tells clients apart (an API client id, a tenant) if anonymous clients call them.");
		}
	}

	/**
	 * A transactional method deeper down, such as a service's
	 * {@code @Transactional(isolation = SERIALIZABLE)}, joins the handler's transaction,
	 * which the library began before anyone could know what that method asks for. Spring
	 * lets it join silently with a weaker isolation unless its transaction manager
	 * validates existing transactions: then it refuses, and the request fails before any
	 * of its work commits.
	 */
	private void validateExistingTransactions(PlatformTransactionManager transactionManager) {
		if (!this.validateExistingTransactions) {
			return;
		}
		if (transactionManager instanceof AbstractPlatformTransactionManager validating) {
			if (!validating.isValidateExistingTransaction()) {
				validating.setValidateExistingTransaction(true);
				logger.info("Transaction manager " + transactionManager.getClass().getSimpleName()
						+ " now refuses a transaction that joins an @Idempotent handler's with another isolation"
						+ " level or read-only flag (idempotency.web.validate-existing-transactions)");
			}
		}
		else {
			logger.warn("Transaction manager " + transactionManager.getClass().getName() + " cannot be made to refuse"
					+ " a transaction that joins an @Idempotent handler's with another isolation level: declare the"
					+ " isolation on the handler");
		}
	}

	@Override
	public void doFilter(ServletRequest servletRequest, ServletResponse servletResponse, FilterChain chain)
			throws ServletException, IOException {
		if (!(servletRequest instanceof HttpServletRequest request)
				|| !(servletResponse instanceof HttpServletResponse response) || isPartOfAnother(servletRequest)) {
			chain.doFilter(servletRequest, servletResponse);
			return;
		}
		Prepared prepared = prepared();
		IdempotentEndpoints.Match match = prepared.endpoints().find(request);
		if (match == null) {
			chain.doFilter(request, response);
			return;
		}
		if (request.getDispatcherType() == DispatcherType.INCLUDE) {
			throw new ServletException("@Idempotent handler " + match.endpoint().name() + " cannot be included:"
					+ " an included response cannot be replayed. Forward to it, or request it directly.");
		}
		request.setAttribute(EXECUTING_ATTRIBUTE, Boolean.TRUE);
		try {
			serve(request, response, chain, match, prepared);
		}
		finally {
			request.removeAttribute(EXECUTING_ATTRIBUTE);
		}
	}

	/**
	 * Whether a dispatch belongs to a request that is already answered otherwise: within
	 * the execution of an {@code @Idempotent} handler (its forwards and includes), or
	 * rendering an error (an error dispatch, and what it forwards to).
	 */
	private static boolean isPartOfAnother(ServletRequest request) {
		return request.getAttribute(EXECUTING_ATTRIBUTE) != null || request.getDispatcherType() == DispatcherType.ERROR
				|| request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI) != null;
	}

	private void serve(HttpServletRequest request, HttpServletResponse response, FilterChain chain,
			IdempotentEndpoints.Match match, Prepared prepared) throws ServletException, IOException {
		IdempotentEndpoint endpoint = match.endpoint();
		IdempotentExecution.Settings settings = prepared.settings();
		Assert.state(settings != null, "No settings: the @Idempotent handlers were not checked");
		ProtocolResponses responses = settings.responses();
		List<String> keys = Collections.list(request.getHeaders(KEY_HEADER));
		if (keys.isEmpty() && !endpoint.required()) {
			chain.doFilter(request, response);
			return;
		}
		String key = key(keys, request, response, match, responses);
		if (key == null) {
			return;
		}
		String contentTypeProblem = RequestFingerprints.contentTypeProblem(request.getContentType());
		if (contentTypeProblem != null) {
			responses.invalidContentType(request, response, match, contentTypeProblem);
			return;
		}
		String scope = this.scopeResolver.resolve(request);
		Assert.state(scope != null, "The scope resolver returned null");
		byte[] body = null;
		if (!RequestBodies.isMultipart(request.getContentType())) {
			body = RequestBodies.readUnparsed(request, (int) this.maxRequestBodySize);
			if (body == null) {
				responses.requestTooLarge(request, response, match, this.maxRequestBodySize);
				return;
			}
			if (body.length == 0 && RequestBodies.isForm(request.getContentType())) {
				// The container parsed the form, or there is none: the parameters
				// stand for it.
				body = null;
			}
		}
		String fingerprint;
		try {
			fingerprint = RequestFingerprints.of(request, match.route(), endpoint, body);
		}
		catch (FingerprintLimitExceededException ex) {
			responses.bodyTooComplex(request, response, match, ex);
			return;
		}
		EndpointSettings endpointSettings = prepared.endpointSettings().get(endpoint);
		Assert.state(endpointSettings != null, "No settings for " + endpoint.name());
		IdempotentRequest target = new IdempotentRequest(request, body, endpoint.name());
		new IdempotentExecution(settings, endpointSettings, scope, key, fingerprint, request, response, match)
			.run(target, chain);
	}

	/**
	 * Read the key from the values of its header, or answer why it cannot be.
	 * @return the key, or {@code null} when answered
	 */
	private static @Nullable String key(List<String> values, HttpServletRequest request, HttpServletResponse response,
			IdempotentEndpoints.Match match, ProtocolResponses responses) throws IOException {
		if (values.size() != 1) {
			responses.invalidKey(request, response, match, values.isEmpty() ? null
					: "The Idempotency-Key header was sent " + values.size() + " times; send it exactly once.");
			return null;
		}
		try {
			return IdempotencyKeys.parseHeader(values.get(0));
		}
		catch (InvalidIdempotencyKeyException ex) {
			responses.invalidKey(request, response, match, ex.getMessage() + ".");
			return null;
		}
	}

	/**
	 * What the filter settles once: the handlers, what their requests share (none without
	 * handlers), and the settings of each.
	 */
	private record Prepared(IdempotentEndpoints endpoints, IdempotentExecution.@Nullable Settings settings,
			Map<IdempotentEndpoint, EndpointSettings> endpointSettings) {
	}

}
