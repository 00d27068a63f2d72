package dev.idempotency.autoconfigure.diagnostics;

import dev.idempotency.core.IdempotencyConfigurationException;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Reports a failed startup of the idempotency modules, an
 * {@link IdempotencyConfigurationException} anywhere in the failure's causes, as Spring
 * Boot reports its own: what is wrong, and what to do, instead of a stack trace.
 */
class IdempotencyFailureAnalyzer extends AbstractFailureAnalyzer<IdempotencyConfigurationException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, IdempotencyConfigurationException cause) {
		return new FailureAnalysis(cause.getDescription(), cause.getAction(), cause);
	}

}
