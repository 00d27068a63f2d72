package dev.idempotency.core.internal.handover;

import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;

/**
 * Lets a constructor that copies the array it is given keep it instead, when the caller
 * hands it over: the caller holds the only reference and changes it no more. The
 * constructor asks {@link #isHandedOver}; only the array passed to {@link #handOver}, and
 * only on its thread while the construction runs, is handed over.
 */
public final class ArrayHandover {

	private static final ThreadLocal<byte @Nullable []> handedOver = new ThreadLocal<>();

	private ArrayHandover() {
	}

	/**
	 * Run a construction that may keep {@code array} without a copy.
	 * @param <T> what is constructed
	 * @param array the array handed over
	 * @param construction the construction
	 * @return what it constructed
	 */
	public static <T> T handOver(byte[] array, Supplier<T> construction) {
		handedOver.set(array);
		try {
			return construction.get();
		}
		finally {
			handedOver.remove();
		}
	}

	/**
	 * Whether {@code array} is being handed over on this thread.
	 * @param array the array a constructor was given
	 * @return whether it may keep it without a copy
	 */
	public static boolean isHandedOver(byte[] array) {
		return handedOver.get() == array;
	}

}
