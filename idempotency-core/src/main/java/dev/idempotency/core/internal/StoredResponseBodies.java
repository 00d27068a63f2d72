package dev.idempotency.core.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.internal.handover.ArrayHandover;
import org.jspecify.annotations.Nullable;

/**
 * The body of a {@link StoredResponse} without the copies that its public contract takes:
 * a response built from an array that nobody else holds, and the array of a response read
 * without a copy, for the modules' own request path (the response buffer, the key store,
 * the encryption codec), so that a body is copied once between the handler's buffer and
 * the statement that stores it. Whoever calls these must neither change the array
 * afterwards nor hand it to code that might.
 */
public final class StoredResponseBodies {

	private StoredResponseBodies() {
	}

	/**
	 * A response that keeps {@code body} itself instead of a copy.
	 * @param status the HTTP status code
	 * @param headers the headers to replay, in order
	 * @param body the body, which nobody else holds and nobody changes from now on
	 * @return the response
	 */
	public static StoredResponse taking(int status, Map<String, List<String>> headers, byte[] body) {
		return ArrayHandover.handOver(body, () -> new StoredResponse(status, headers, body));
	}

	/**
	 * The body of a response, not a copy of it: to be read, never changed.
	 * @param response the response
	 * @return its body
	 */
	public static byte[] peek(StoredResponse response) {
		Capture capture = new Capture();
		try {
			response.writeBodyTo(capture);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		return (capture.body != null) ? capture.body : new byte[0];
	}

	/**
	 * Takes the array that {@link StoredResponse#writeBodyTo} writes in one call; fails
	 * if it ever writes its body otherwise, rather than return part of it.
	 */
	private static final class Capture extends OutputStream {

		private byte @Nullable [] body;

		@Override
		public void write(byte[] b) {
			if (this.body != null) {
				throw new IllegalStateException("StoredResponse.writeBodyTo wrote its body in more than one call");
			}
			this.body = b;
		}

		@Override
		public void write(byte[] b, int off, int len) {
			throw new IllegalStateException("StoredResponse.writeBodyTo no longer writes its body in one call");
		}

		@Override
		public void write(int b) {
			throw new IllegalStateException("StoredResponse.writeBodyTo no longer writes its body in one call");
		}

	}

}
