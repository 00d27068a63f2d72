package dev.idempotency.web;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import org.jspecify.annotations.Nullable;

/**
 * The request as an {@code @Idempotent} handler sees it: its body, which the filter read
 * for the fingerprint, served again from memory, and no asynchronous processing.
 * <p>
 * A handler declared loosely ({@code Object}, {@code ResponseEntity<?>}) passes the
 * startup check and may still return a {@code CompletableFuture}, a
 * {@code DeferredResult} or a {@code Callable} at run time. Spring MVC would then finish
 * the request on another thread, after the filter has given its answer: starting
 * asynchronous processing is refused here, before Spring MVC hands the result over, so
 * that a {@code Callable} never runs and nothing is sent outside the transaction.
 */
final class IdempotentRequest extends HttpServletRequestWrapper {

	private final byte @Nullable [] body;

	private final String handler;

	private @Nullable ServletInputStream stream;

	private @Nullable BufferedReader reader;

	private volatile boolean asyncRefused;

	/**
	 * Wrap a request.
	 * @param request the request
	 * @param body the body as read, or {@code null} when the container parsed it (forms
	 * and multipart)
	 * @param handler the name of the handler, for messages
	 */
	IdempotentRequest(HttpServletRequest request, byte @Nullable [] body, String handler) {
		super(request);
		this.body = body;
		this.handler = handler;
	}

	@Override
	public AsyncContext startAsync() {
		throw refuseAsync();
	}

	@Override
	public AsyncContext startAsync(ServletRequest request, ServletResponse response) {
		throw refuseAsync();
	}

	private IllegalStateException refuseAsync() {
		this.asyncRefused = true;
		return new IllegalStateException("@Idempotent handler " + this.handler + " returned an asynchronous result"
				+ " at run time, which cannot be held until its transaction commits. Return the result"
				+ " synchronously (and declare the return type as such), or remove @Idempotent.");
	}

	/**
	 * Whether the handler tried to start asynchronous processing.
	 */
	boolean isAsyncRefused() {
		return this.asyncRefused;
	}

	@Override
	public ServletInputStream getInputStream() throws IOException {
		byte[] body = this.body;
		if (body == null) {
			return super.getInputStream();
		}
		if (this.reader != null) {
			throw new IllegalStateException("getReader() has already been called for this request");
		}
		if (this.stream == null) {
			this.stream = new BodyStream(body);
		}
		return this.stream;
	}

	@Override
	public BufferedReader getReader() throws IOException {
		byte[] body = this.body;
		if (body == null) {
			return super.getReader();
		}
		if (this.stream != null) {
			throw new IllegalStateException("getInputStream() has already been called for this request");
		}
		if (this.reader == null) {
			String encoding = getCharacterEncoding();
			Charset charset = (encoding != null) ? Charset.forName(encoding) : StandardCharsets.ISO_8859_1;
			this.reader = new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), charset));
		}
		return this.reader;
	}

	@Override
	public int getContentLength() {
		return (this.body != null) ? this.body.length : super.getContentLength();
	}

	@Override
	public long getContentLengthLong() {
		return (this.body != null) ? this.body.length : super.getContentLengthLong();
	}

	private static final class BodyStream extends ServletInputStream {

		private final ByteArrayInputStream in;

		BodyStream(byte[] body) {
			this.in = new ByteArrayInputStream(body);
		}

		@Override
		public int read() {
			return this.in.read();
		}

		@Override
		public int read(byte[] b, int off, int len) {
			return this.in.read(b, off, len);
		}

		@Override
		public boolean isFinished() {
			return this.in.available() == 0;
		}

		@Override
		public boolean isReady() {
			return true;
		}

		@Override
		public void setReadListener(ReadListener listener) {
			throw new UnsupportedOperationException("Asynchronous reads are not supported under @Idempotent");
		}

	}

}
