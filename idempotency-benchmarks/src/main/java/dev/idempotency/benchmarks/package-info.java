/**
 * Side-by-side benchmarks of the idempotency primitives against hand-written baselines.
 */
@NullMarked
package dev.idempotency.benchmarks;

import org.jspecify.annotations.NullMarked;
