package dev.idempotency.autoconfigure.ops;

import java.util.List;
import java.util.Objects;

import dev.idempotency.core.IdempotencyConfigurationException;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Fails startup when a {@link RetentionRule} is broken, listing all broken rules at once.
 */
class RetentionRulesValidator implements InitializingBean {

	private final ObjectProvider<RetentionRule> rules;

	RetentionRulesValidator(ObjectProvider<RetentionRule> rules) {
		this.rules = rules;
	}

	@Override
	public void afterPropertiesSet() {
		List<String> violations = this.rules.orderedStream()
			.map(RetentionRule::violation)
			.filter(Objects::nonNull)
			.toList();
		if (!violations.isEmpty()) {
			throw new IdempotencyConfigurationException(
					"Invalid idempotency retention settings:\n - " + String.join("\n - ", violations),
					"After a row is deleted there is no protection against a retry: fix the settings above.");
		}
	}

}
