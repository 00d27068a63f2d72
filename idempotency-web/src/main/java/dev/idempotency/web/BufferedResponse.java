package dev.idempotency.web;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpHeaders;

/**
 * Holds the body of a response in memory until the transaction has committed, so that the
 * client never receives a response whose effects were rolled back (H6), and so that the
 * stored body is exactly the bytes that are sent (H3).
 * <p>
 * Status and headers go to the wrapped response, which stays uncommitted because nothing
 * is written to it; {@code sendError} and {@code sendRedirect} are recorded instead of
 * committing it.
 * <p>
 * The body is held up to a limit. Past it the body is dropped and the response marked
 * {@link #isOverflowed() overflowed}: it can neither be held until the commit nor sent
 * before it.
 */
final class BufferedResponse extends HttpServletResponseWrapper {

	private final long limit;

	private ByteArrayOutputStream body = new ByteArrayOutputStream(1024);

	private boolean overflowed;

	private final ServletOutputStream stream = new BodyStream();

	private @Nullable PrintWriter writer;

	private @Nullable Integer errorStatus;

	private @Nullable String errorMessage;

	private boolean committed;

	BufferedResponse(HttpServletResponse response, long limit) {
		super(response);
		this.limit = limit;
	}

	@Override
	public ServletOutputStream getOutputStream() {
		if (this.writer != null) {
			throw new IllegalStateException("getWriter() has already been called for this response");
		}
		return this.stream;
	}

	@Override
	public PrintWriter getWriter() {
		if (this.writer == null) {
			this.writer = new PrintWriter(new OutputStreamWriter(this.stream, Charset.forName(getCharacterEncoding())));
		}
		return this.writer;
	}

	@Override
	public void sendError(int sc, @Nullable String msg) {
		checkNotCommitted();
		clearBody();
		this.errorStatus = sc;
		this.errorMessage = msg;
		super.setStatus(sc);
		this.committed = true;
	}

	@Override
	public void sendError(int sc) {
		sendError(sc, null);
	}

	@Override
	public void sendRedirect(String location) {
		sendRedirect(location, SC_FOUND, true);
	}

	@Override
	public void sendRedirect(String location, int sc, boolean clearBuffer) {
		checkNotCommitted();
		if (clearBuffer) {
			clearBody();
		}
		super.setStatus(sc);
		super.setHeader(HttpHeaders.LOCATION, asSent(location));
		this.committed = true;
	}

	@Override
	public void setContentLength(int len) {
		// Set when the body is released; the handler's value would be wrong after an
		// error replaced the body.
	}

	@Override
	public void setContentLengthLong(long len) {
	}

	@Override
	public void setHeader(String name, @Nullable String value) {
		if (!HttpHeaders.CONTENT_LENGTH.equalsIgnoreCase(name)) {
			super.setHeader(name, asSent(value));
		}
	}

	@Override
	public void addHeader(String name, @Nullable String value) {
		if (!HttpHeaders.CONTENT_LENGTH.equalsIgnoreCase(name)) {
			super.addHeader(name, asSent(value));
		}
	}

	/**
	 * A header value as Tomcat sends it: each control character but the tab, and each
	 * character beyond ISO-8859-1, becomes a space. A handler that copies client text
	 * into a header (a {@code Location} with a line break) sends the same bytes whatever
	 * the container, and its response can be stored and replayed as it was sent.
	 */
	static @Nullable String asSent(@Nullable String value) {
		if (value == null) {
			return null;
		}
		char[] chars = null;
		for (int i = 0; i < value.length(); i++) {
			char c = value.charAt(i);
			if ((c < 0x20 && c != '\t') || c == 0x7f || c > 0xff) {
				if (chars == null) {
					chars = value.toCharArray();
				}
				chars[i] = ' ';
			}
		}
		return (chars != null) ? new String(chars) : value;
	}

	@Override
	public void setIntHeader(String name, int value) {
		if (!HttpHeaders.CONTENT_LENGTH.equalsIgnoreCase(name)) {
			super.setIntHeader(name, value);
		}
	}

	@Override
	public void addIntHeader(String name, int value) {
		if (!HttpHeaders.CONTENT_LENGTH.equalsIgnoreCase(name)) {
			super.addIntHeader(name, value);
		}
	}

	@Override
	public void flushBuffer() {
		flushWriter();
	}

	@Override
	public void setBufferSize(int size) {
	}

	@Override
	public boolean isCommitted() {
		return this.committed;
	}

	@Override
	public void reset() {
		checkNotCommitted();
		super.reset();
		clearBody();
		this.writer = null;
	}

	@Override
	public void resetBuffer() {
		checkNotCommitted();
		clearBody();
	}

	private void clearBody() {
		this.body.reset();
		this.overflowed = false;
	}

	/**
	 * Whether the handler wrote more than the limit, so that the body was dropped.
	 */
	boolean isOverflowed() {
		flushWriter();
		return this.overflowed;
	}

	private void checkNotCommitted() {
		if (this.committed) {
			throw new IllegalStateException("The response has already been committed");
		}
	}

	private void flushWriter() {
		if (this.writer != null) {
			this.writer.flush();
		}
	}

	/**
	 * The status recorded by {@code sendError}, if it was called.
	 */
	@Nullable Integer getErrorStatus() {
		return this.errorStatus;
	}

	/**
	 * Forget a {@code sendError}, so that a body of our own can replace it and the error
	 * response is complete here, to be stored and replayed byte for byte.
	 */
	void clearError() {
		this.errorStatus = null;
		this.errorMessage = null;
		this.committed = false;
		clearBody();
	}

	int getBodySize() {
		flushWriter();
		return this.body.size();
	}

	byte[] getBody() {
		flushWriter();
		return this.body.toByteArray();
	}

	/**
	 * Send what the handler produced to the client.
	 */
	void release() throws IOException {
		HttpServletResponse response = (HttpServletResponse) getResponse();
		if (this.errorStatus != null) {
			response.sendError(this.errorStatus, this.errorMessage);
			return;
		}
		flushWriter();
		response.setContentLength(this.body.size());
		if (this.body.size() > 0) {
			this.body.writeTo(response.getOutputStream());
		}
		response.flushBuffer();
	}

	private final class BodyStream extends ServletOutputStream {

		@Override
		public void write(int b) {
			if (fits(1)) {
				BufferedResponse.this.body.write(b);
			}
		}

		@Override
		public void write(byte[] b, int off, int len) {
			if (fits(len)) {
				BufferedResponse.this.body.write(b, off, len);
			}
		}

		private boolean fits(int length) {
			if (BufferedResponse.this.overflowed) {
				return false;
			}
			if (BufferedResponse.this.body.size() + (long) length > BufferedResponse.this.limit) {
				BufferedResponse.this.overflowed = true;
				BufferedResponse.this.body = new ByteArrayOutputStream(0);
				return false;
			}
			return true;
		}

		@Override
		public boolean isReady() {
			return true;
		}

		@Override
		public void setWriteListener(WriteListener listener) {
			throw new UnsupportedOperationException("Asynchronous writes are not supported under @Idempotent");
		}

	}

}
