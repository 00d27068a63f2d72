package dev.idempotency.web;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.StoredResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.util.Assert;

/**
 * The answers of the protocol itself, given instead of the handler's: the replay of a
 * stored response, and the problem details of a request that must not run, which
 * {@link Problems} renders through the application's Spring MVC. Both carry the CORS
 * headers Spring MVC gives the handler. Each outcome is counted in the metrics. Keys are
 * logged by their hash only.
 */
final class ProtocolResponses {

	/** The response header that marks a replayed response. */
	static final String REPLAYED_HEADER = "Idempotent-Replayed";

	/**
	 * A stored header that marks a response whose body was over the size cap; it is never
	 * sent to a client.
	 */
	static final String BODY_OMITTED_HEADER = "Idempotency-Body-Omitted";

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	private final IdempotencyMetrics metrics;

	private final Problems problems;

	private final StoredResponseCodec codec;

	private final Duration maxRetryAfter;

	ProtocolResponses(IdempotencyMetrics metrics, Problems problems, StoredResponseCodec codec,
			Duration maxRetryAfter) {
		Assert.notNull(metrics, "metrics must not be null");
		Assert.notNull(problems, "problems must not be null");
		Assert.notNull(codec, "codec must not be null");
		Assert.notNull(maxRetryAfter, "maxRetryAfter must not be null");
		this.metrics = metrics;
		this.problems = problems;
		this.codec = codec;
		// The header counts whole seconds, rounded up: a cap of whole seconds stays one.
		this.maxRetryAfter = Duration.ofSeconds(maxRetryAfter.getSeconds());
	}

	/**
	 * Answer a request without a valid key.
	 * @param detail what is wrong with the key, or {@code null} when it is missing
	 */
	void invalidKey(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			@Nullable String detail) throws IOException {
		if (detail == null) {
			send(request, response, match, HttpStatus.BAD_REQUEST, IdempotencyProblemTypes.MISSING_KEY,
					"Missing Idempotency-Key", "This operation requires an Idempotency-Key header.", null);
		}
		else {
			send(request, response, match, HttpStatus.BAD_REQUEST, IdempotencyProblemTypes.INVALID_KEY,
					"Invalid Idempotency-Key", detail, null);
		}
	}

	void requestTooLarge(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			long limit) throws IOException {
		log.debug("Refused a request body over " + limit + " bytes");
		send(request, response, match, HttpStatus.CONTENT_TOO_LARGE, IdempotencyProblemTypes.REQUEST_TOO_LARGE,
				"Request too large",
				"The request body is larger than the " + limit
						+ " bytes this operation accepts. Nothing was done, and the Idempotency-Key was not used.",
				null);
	}

	/**
	 * Answer a request whose {@code Content-Type} is no media type. The header is not
	 * echoed: it is the client's own, and may be long.
	 * @param reason what is wrong with the header, for the log
	 */
	void invalidContentType(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			String reason) throws IOException {
		log.debug("Refused a request whose Content-Type is no media type: " + reason);
		send(request, response, match, HttpStatus.UNSUPPORTED_MEDIA_TYPE, IdempotencyProblemTypes.INVALID_CONTENT_TYPE,
				"Invalid Content-Type",
				"The Content-Type header is not a media type: it does not parse, names an unknown charset, or is a"
						+ " wildcard. Nothing was done, and the Idempotency-Key was not used.",
				null);
	}

	void bodyTooComplex(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			Exception ex) throws IOException {
		log.debug("Refused a JSON body beyond the limits of its fingerprint", ex);
		send(request, response, match, HttpStatus.BAD_REQUEST, IdempotencyProblemTypes.BODY_TOO_COMPLEX,
				"Request too complex", "The JSON body is nested too deeply, or holds a number or a name that is too"
						+ " long. Nothing was done, and the Idempotency-Key was not used.",
				null);
	}

	void responseTooLarge(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			long limit, KeyHash keyHash) throws IOException {
		log.error("The response to key " + keyHash + " was larger than the " + limit + " bytes held until the commit"
				+ " (idempotency.web.max-response-size); its work is rolled back and the key released");
		send(request, response, match, HttpStatus.INTERNAL_SERVER_ERROR, IdempotencyProblemTypes.RESPONSE_TOO_LARGE,
				"Response too large", "The response was too large to be held until the operation committed, so"
						+ " nothing was done. Retrying with the same Idempotency-Key runs it again.",
				null);
	}

	void keyReused(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			KeyHash keyHash) throws IOException {
		this.metrics.fingerprintMismatch(IdempotencyMetrics.WEB);
		if (log.isDebugEnabled()) {
			log.debug("Key " + keyHash + " reused with a different request");
		}
		send(request, response, match, HttpStatus.UNPROCESSABLE_CONTENT, IdempotencyProblemTypes.KEY_REUSED,
				"Idempotency-Key reused", "This Idempotency-Key was already used for a different request (method,"
						+ " path or body). Send a new key for a new request.",
				null);
	}

	/**
	 * Answer a duplicate of a running request.
	 * @param retryAfter how long the key may stay taken at most: the rest of its lease.
	 * The client is told to come back after that, or after the cap when it is shorter: a
	 * lease is sized for the slowest run and for a crash, not for the usual one, so that
	 * a client waiting for all of it would wait far longer than the first request takes
	 */
	void keyInUse(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			Duration retryAfter, KeyHash keyHash) throws IOException {
		this.metrics.inProgressConflict(IdempotencyMetrics.WEB);
		if (log.isDebugEnabled()) {
			log.debug("Key " + keyHash + " is in use");
		}
		send(request, response, match, HttpStatus.CONFLICT, IdempotencyProblemTypes.KEY_IN_USE, "Request in progress",
				"A request with this Idempotency-Key is still being processed. Retry after it completes.",
				(retryAfter.compareTo(this.maxRetryAfter) < 0) ? retryAfter : this.maxRetryAfter);
	}

	void abandoned(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			KeyHash keyHash) throws IOException {
		log.warn("Key " + keyHash + " was abandoned by the request that claimed it; refusing to run it again until"
				+ " it is reviewed");
		send(request, response, match, HttpStatus.CONFLICT, IdempotencyProblemTypes.ABANDONED_CLAIM,
				"Request abandoned", "A request with this Idempotency-Key started but did not finish in time. It must"
						+ " be reviewed before it is retried.",
				null);
	}

	void claimLost(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			KeyHash keyHash) throws IOException {
		log.warn("Key " + keyHash + " was taken over by another request while this one ran; its work is rolled"
				+ " back");
		send(request, response, match, HttpStatus.CONFLICT, IdempotencyProblemTypes.CLAIM_LOST, "Claim lost",
				"This request ran longer than its lease and another request with the same Idempotency-Key took"
						+ " over; this request's work was rolled back.",
				null);
	}

	/**
	 * Answer a request whose key was done but whose stored response cannot be read. The
	 * request is not run again: it was done once, and its key protects it until its
	 * retention ends.
	 */
	void unreadable(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			Exception ex, KeyHash keyHash) throws IOException {
		log.error("The stored response of key " + keyHash + " cannot be read for its replay: " + ex.getMessage()
				+ ". The request was done and is not run again; repeats get a 500 problem until the key's"
				+ " retention ends. Configure the key it was encrypted with among the previous keys"
				+ " (idempotency.web.encryption.previous-keys) to replay it", ex.getCause());
		send(request, response, match, HttpStatus.INTERNAL_SERVER_ERROR,
				IdempotencyProblemTypes.STORED_RESPONSE_UNREADABLE, "Stored response unreadable",
				"A request with this Idempotency-Key was already done, but its stored response cannot be read,"
						+ " so it can be neither replayed nor run again. Do not retry with this key.",
				null);
	}

	void commitFailed(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			@Nullable Exception ex, KeyHash keyHash) throws IOException {
		log.warn("The transaction of key " + keyHash + " did not commit; nothing was done", ex);
		send(request, response, match, HttpStatus.INTERNAL_SERVER_ERROR, IdempotencyProblemTypes.COMMIT_FAILED,
				"Not committed",
				"The operation could not be committed and nothing was done. Retry with the same Idempotency-Key.",
				null);
	}

	void transactionAborted(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			KeyHash keyHash) throws IOException {
		log.error("The transaction of key " + keyHash + " was aborted by a statement that failed before the handler"
				+ " answered, so it can never commit; nothing was done and the key is released. A handler that"
				+ " expects a statement to fail must run it in a nested transaction (a savepoint, such as"
				+ " @Transactional(propagation = NESTED)) or avoid the failure (INSERT ... ON CONFLICT DO NOTHING)");
		send(request, response, match, HttpStatus.INTERNAL_SERVER_ERROR, IdempotencyProblemTypes.TRANSACTION_ABORTED,
				"Transaction aborted",
				"A statement of this operation failed and the operation went on, but the database had aborted its"
						+ " transaction, so nothing was done. The operation must run such a statement in a nested"
						+ " transaction, or avoid the failure (for example with INSERT ... ON CONFLICT DO NOTHING)."
						+ " Retrying with the same Idempotency-Key runs it again.",
				null);
	}

	void transactionIncompatible(HttpServletRequest request, HttpServletResponse response,
			IdempotentEndpoints.Match match, Exception ex, KeyHash keyHash) throws IOException {
		log.error("A transactional method of the handler of key " + keyHash + " refused to join the transaction"
				+ " that the library runs the handler in, whose isolation level or read-only flag differs from what"
				+ " it declares; nothing was done and the key is released. Declare the same on the @Idempotent"
				+ " handler, for example @Transactional(isolation = SERIALIZABLE), so that the library begins its"
				+ " transaction with it", ex);
		send(request, response, match, HttpStatus.INTERNAL_SERVER_ERROR,
				IdempotencyProblemTypes.TRANSACTION_INCOMPATIBLE, "Transaction incompatible",
				"Part of this operation asked for a transaction (an isolation level or a read-only flag) other"
						+ " than the one the operation runs in, so nothing was done. The operation must declare it"
						+ " itself, for example with @Transactional(isolation = SERIALIZABLE) on its handler.",
				null);
	}

	/**
	 * Give an error that the handler only signalled ({@code response.sendError}) a body
	 * of its own, so that it can be stored and replayed byte for byte.
	 */
	void renderError(HttpServletRequest request, BufferedResponse buffered, int status) throws IOException {
		buffered.clearError();
		this.problems.write(request, buffered, ResponseEntity.of(ProblemDetail.forStatus(status)).build());
	}

	private void send(HttpServletRequest request, HttpServletResponse response, IdempotentEndpoints.Match match,
			HttpStatus status, URI type, String title, String detail, @Nullable Duration retryAfter)
			throws IOException {
		this.problems.send(request, response, match, new IdempotencyProblem(status, type, title, detail, retryAfter));
	}

	/**
	 * Replay the stored response of a completed key, or explain why it cannot be.
	 */
	void replay(IdempotencyRecord record, HttpServletRequest request, HttpServletResponse response,
			IdempotentEndpoints.Match match, KeyHash keyHash) throws IOException {
		IdempotencyMetrics.Timing timing = this.metrics.start(IdempotencyMetrics.Operation.REPLAY,
				IdempotencyMetrics.WEB);
		try {
			writeReplay(record, request, response, match, keyHash);
		}
		catch (IOException | RuntimeException | Error ex) {
			timing.stop(ex);
			throw ex;
		}
		timing.stop();
	}

	private void writeReplay(IdempotencyRecord record, HttpServletRequest request, HttpServletResponse response,
			IdempotentEndpoints.Match match, KeyHash keyHash) throws IOException {
		Assert.state(record.response() != null, "A DONE record has a response");
		StoredResponse stored;
		try {
			stored = this.codec.open(record.response(), record.scope(), record.key());
		}
		catch (RuntimeException ex) {
			unreadable(request, response, match, ex, keyHash);
			return;
		}
		List<String> omitted = stored.headers().get(BODY_OMITTED_HEADER);
		if (omitted != null) {
			send(request, response, match, HttpStatus.CONFLICT, IdempotencyProblemTypes.RESPONSE_NOT_STORED,
					"Response not stored",
					"A request with this Idempotency-Key was already done (status " + stored.status()
							+ "), but its response of " + omitted.get(0)
							+ " bytes was over the storage limit and cannot be replayed.",
					null);
			return;
		}
		if (!match.applyCors(request, response)) {
			return;
		}
		this.metrics.replayed(IdempotencyMetrics.WEB);
		if (log.isDebugEnabled()) {
			log.debug("Key " + keyHash + " replayed");
		}
		response.setStatus(stored.status());
		stored.headers().forEach((name, values) -> {
			if (HttpHeaders.CONTENT_TYPE.equalsIgnoreCase(name)) {
				response.setContentType(values.get(0));
			}
			else {
				values.forEach((value) -> response.addHeader(name, value));
			}
		});
		response.setHeader(REPLAYED_HEADER, "true");
		response.setContentLength(stored.bodyLength());
		if (stored.bodyLength() > 0) {
			stored.writeBodyTo(response.getOutputStream());
		}
		response.flushBuffer();
	}

}
