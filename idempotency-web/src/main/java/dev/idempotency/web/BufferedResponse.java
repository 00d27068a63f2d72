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
 */
final class BufferedResponse extends HttpServletResponseWrapper {

	private final ByteArrayOutputStream body = new ByteArrayOutputStream(1024);

	private final ServletOutputStream stream = new BodyStream();

	private @Nullable PrintWriter writer;

	private @Nullable Integer errorStatus;

	private @Nullable String errorMessage;

	private boolean committed;

	BufferedResponse(HttpServletResponse response) {
		super(response);
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
			this.writer = new PrintWriter(new OutputStreamWriter(this.body, Charset.forName(getCharacterEncoding())));
		}
		return this.writer;
	}

	@Override
	public void sendError(int sc, @Nullable String msg) {
		checkNotCommitted();
		this.body.reset();
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
			this.body.reset();
		}
		super.setStatus(sc);
		super.setHeader(HttpHeaders.LOCATION, location);
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
			super.setHeader(name, value);
		}
	}

	@Override
	public void addHeader(String name, @Nullable String value) {
		if (!HttpHeaders.CONTENT_LENGTH.equalsIgnoreCase(name)) {
			super.addHeader(name, value);
		}
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
		this.body.reset();
		this.writer = null;
	}

	@Override
	public void resetBuffer() {
		checkNotCommitted();
		this.body.reset();
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
	 * Replace a {@code sendError} by a body of our own, so that the error response is
	 * complete here and can be stored and replayed byte for byte.
	 */
	void renderError(String contentType, byte[] problem) {
		this.errorStatus = null;
		this.errorMessage = null;
		this.body.reset();
		this.body.writeBytes(problem);
		getResponse().setContentType(contentType);
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
		byte[] bytes = getBody();
		response.setContentLength(bytes.length);
		if (bytes.length > 0) {
			response.getOutputStream().write(bytes);
		}
		response.flushBuffer();
	}

	private final class BodyStream extends ServletOutputStream {

		@Override
		public void write(int b) {
			BufferedResponse.this.body.write(b);
		}

		@Override
		public void write(byte[] b, int off, int len) {
			BufferedResponse.this.body.write(b, off, len);
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
