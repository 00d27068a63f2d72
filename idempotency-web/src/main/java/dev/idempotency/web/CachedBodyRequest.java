package dev.idempotency.web;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import org.jspecify.annotations.Nullable;

/**
 * A request whose body was read once for the fingerprint and is served again to the
 * handler from memory.
 */
final class CachedBodyRequest extends HttpServletRequestWrapper {

	private final byte[] body;

	private @Nullable ServletInputStream stream;

	private @Nullable BufferedReader reader;

	CachedBodyRequest(HttpServletRequest request, byte[] body) {
		super(request);
		this.body = body;
	}

	@Override
	public ServletInputStream getInputStream() {
		if (this.reader != null) {
			throw new IllegalStateException("getReader() has already been called for this request");
		}
		if (this.stream == null) {
			this.stream = new BodyStream(this.body);
		}
		return this.stream;
	}

	@Override
	public BufferedReader getReader() {
		if (this.stream != null) {
			throw new IllegalStateException("getInputStream() has already been called for this request");
		}
		if (this.reader == null) {
			String encoding = getCharacterEncoding();
			Charset charset = (encoding != null) ? Charset.forName(encoding) : StandardCharsets.ISO_8859_1;
			this.reader = new BufferedReader(new InputStreamReader(new ByteArrayInputStream(this.body), charset));
		}
		return this.reader;
	}

	@Override
	public int getContentLength() {
		return this.body.length;
	}

	@Override
	public long getContentLengthLong() {
		return this.body.length;
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
