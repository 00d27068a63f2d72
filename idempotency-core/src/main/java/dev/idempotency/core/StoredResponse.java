package dev.idempotency.core;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.util.Assert;

/**
 * A response kept for replay: status, the headers to replay, and the body bytes exactly
 * as they were sent.
 *
 * @param status the HTTP status code
 * @param headers the headers to replay, in order
 * @param body the body bytes
 * @since 0.1.0
 */
public record StoredResponse(int status, Map<String, List<String>> headers, byte[] body) {

	/**
	 * Check the arguments and take defensive copies.
	 */
	public StoredResponse {
		Assert.isTrue(status >= 100 && status <= 599, "status must be an HTTP status code");
		Assert.notNull(headers, "headers must not be null");
		Assert.notNull(body, "body must not be null");
		Map<String, List<String>> copy = new LinkedHashMap<>();
		headers.forEach((name, values) -> {
			Assert.isTrue(isToken(name), () -> "Invalid header name '" + name + "'");
			values.forEach((value) -> Assert.isTrue(value.indexOf('\r') < 0 && value.indexOf('\n') < 0,
					"Header values must not contain line breaks"));
			copy.put(name, List.copyOf(values));
		});
		headers = Collections.unmodifiableMap(copy);
		body = body.clone();
	}

	private static boolean isToken(String name) {
		return !name.isEmpty() && name.chars().allMatch((c) -> c > 0x20 && c < 0x7f && c != ':');
	}

	@Override
	public byte[] body() {
		return this.body.clone();
	}

	/**
	 * Return the size of the body, without a copy of it.
	 * @return the number of bytes of the body
	 * @since 0.1.0
	 */
	public int bodyLength() {
		return this.body.length;
	}

	/**
	 * Write the body to a stream, without a copy of it: what a replay sends.
	 * @param out the stream
	 * @throws IOException when the stream fails
	 * @since 0.1.0
	 */
	public void writeBodyTo(OutputStream out) throws IOException {
		out.write(this.body);
	}

	@Override
	public boolean equals(Object other) {
		return (other instanceof StoredResponse that) && this.status == that.status && this.headers.equals(that.headers)
				&& Arrays.equals(this.body, that.body);
	}

	@Override
	public int hashCode() {
		return 31 * (31 * this.status + this.headers.hashCode()) + Arrays.hashCode(this.body);
	}

	@Override
	public String toString() {
		return "StoredResponse[status=" + this.status + ", headers=" + this.headers.keySet() + ", body="
				+ this.body.length + " bytes]";
	}

}
