/**
 * The crash demo: the same Kafka listener stopped between its database commit and its
 * offset commit, written naively and with {@code @IdempotentListener}.
 */
@NullMarked
package dev.idempotency.samples.crashdemo;

import org.jspecify.annotations.NullMarked;
