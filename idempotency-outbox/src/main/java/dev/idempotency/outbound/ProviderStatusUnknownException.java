package dev.idempotency.outbound;

/**
 * Thrown instead of re-sending an operation to a status-first provider
 * ({@link ProviderPolicy#statusFirst()}) that could not tell what became of the earlier
 * attempt. Nothing was sent; a later retry asks again.
 *
 * @since 0.1.0
 */
public class ProviderStatusUnknownException extends IllegalStateException {

	private final transient OutboundOperation operation;

	ProviderStatusUnknownException(OutboundOperation operation) {
		super("Not re-sending operation " + operation.keyHash() + " (key hash) to provider '" + operation.provider()
				+ "': the provider could not tell what became of attempt " + operation.attempts()
				+ "; retry later, when it can");
		this.operation = operation;
	}

	/**
	 * The operation that was not sent.
	 * @return the operation
	 */
	public OutboundOperation getOperation() {
		return this.operation;
	}

}
