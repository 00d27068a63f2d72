/**
 * Failure analysis of the startup failures of the idempotency modules.
 */
@NullMarked
package dev.idempotency.autoconfigure.diagnostics;

import org.jspecify.annotations.NullMarked;
