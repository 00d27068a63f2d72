package dev.idempotency.benchmarks;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A minimal HTTP/1.1 client over one keep-alive connection: it writes a request and reads
 * the response whole, so that what is timed is the server and not a client library. One
 * instance per client thread.
 */
final class KeepAliveConnection implements AutoCloseable {

	private final int port;

	private Socket socket;

	private OutputStream out;

	private InputStream in;

	KeepAliveConnection(int port) throws IOException {
		this.port = port;
		connect();
	}

	private void connect() throws IOException {
		this.socket = new Socket(InetAddress.getLoopbackAddress(), this.port);
		this.socket.setTcpNoDelay(true);
		this.out = this.socket.getOutputStream();
		this.in = new BufferedInputStream(this.socket.getInputStream(), 8192);
	}

	/**
	 * Send a JSON POST and read the response.
	 * @return the status, negated when the response was a replay
	 */
	int post(String path, String key, byte[] body) throws IOException {
		StringBuilder head = new StringBuilder(256).append("POST ")
			.append(path)
			.append(" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ")
			.append(body.length)
			.append("\r\n");
		if (key != null) {
			head.append("Idempotency-Key: ").append(key).append("\r\n");
		}
		head.append("\r\n");
		this.out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
		this.out.write(body);
		this.out.flush();
		return read();
	}

	private int read() throws IOException {
		String status = line();
		int code = Integer.parseInt(status.substring(9, 12));
		long length = -1;
		boolean chunked = false;
		boolean replayed = false;
		boolean close = false;
		for (String header = line(); !header.isEmpty(); header = line()) {
			String lower = header.toLowerCase(Locale.ROOT);
			if (lower.startsWith("content-length:")) {
				length = Long.parseLong(header.substring(15).trim());
			}
			else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
				chunked = true;
			}
			else if (lower.startsWith("idempotent-replayed:")) {
				replayed = true;
			}
			else if (lower.startsWith("connection:") && lower.contains("close")) {
				close = true;
			}
		}
		if (chunked) {
			for (long size = Long.parseLong(line().trim(), 16); size > 0; size = Long.parseLong(line().trim(), 16)) {
				skip(size);
				line();
			}
			line();
		}
		else if (length > 0) {
			skip(length);
		}
		if (close) {
			close();
			connect();
		}
		return replayed ? -code : code;
	}

	private void skip(long bytes) throws IOException {
		for (long left = bytes; left > 0;) {
			long skipped = this.in.skip(left);
			if (skipped <= 0) {
				if (this.in.read() < 0) {
					throw new IOException("Connection closed in a body");
				}
				skipped = 1;
			}
			left -= skipped;
		}
	}

	private String line() throws IOException {
		ByteArrayOutputStream line = new ByteArrayOutputStream(64);
		for (int b = this.in.read(); b != '\n'; b = this.in.read()) {
			if (b < 0) {
				throw new IOException("Connection closed");
			}
			if (b != '\r') {
				line.write(b);
			}
		}
		return line.toString(StandardCharsets.ISO_8859_1);
	}

	@Override
	public void close() throws IOException {
		this.socket.close();
	}

}
