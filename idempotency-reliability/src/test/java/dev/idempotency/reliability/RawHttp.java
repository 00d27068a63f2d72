package dev.idempotency.reliability;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * HTTP/1.1 over a bare socket, byte for byte: an HTTP client library refuses to send most
 * of the hostile corpus (control characters in headers, a header twice, a wrong length).
 */
final class RawHttp {

	private RawHttp() {
	}

	/**
	 * Send a POST and read the status line of the answer.
	 * @param port the server port
	 * @param path the path
	 * @param headers header lines, as bytes (ISO-8859-1 or UTF-8 as the case wants)
	 * @param body the body, sent after a Content-Length header unless the headers name
	 * their own framing
	 * @param timeout how long to wait for the answer
	 * @return the status, or -1 without an answer (closed or timed out)
	 */
	static Answer post(int port, String path, List<byte[]> headers, byte[] body, boolean addLength, Duration timeout) {
		long start = System.nanoTime();
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", port), 2000);
			socket.setSoTimeout((int) timeout.toMillis());
			OutputStream out = socket.getOutputStream();
			ByteArrayOutputStream request = new ByteArrayOutputStream();
			request.writeBytes(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nConnection: close\r\n")
				.getBytes(StandardCharsets.ISO_8859_1));
			for (byte[] header : headers) {
				request.writeBytes(header);
				request.writeBytes(new byte[] { '\r', '\n' });
			}
			if (addLength) {
				request.writeBytes(("Content-Length: " + body.length + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
			}
			request.writeBytes(new byte[] { '\r', '\n' });
			out.write(request.toByteArray());
			try {
				out.write(body);
				out.flush();
			}
			catch (IOException ex) {
				// The server may answer and close before reading a body it refuses.
			}
			InputStream in = socket.getInputStream();
			ByteArrayOutputStream answer = new ByteArrayOutputStream();
			byte[] buffer = new byte[8192];
			int read;
			try {
				while ((read = in.read(buffer)) != -1 && answer.size() < 65536) {
					answer.write(buffer, 0, read);
				}
			}
			catch (SocketTimeoutException | java.net.SocketException ex) {
				// What arrived is the answer, if anything did.
			}
			String text = answer.toString(StandardCharsets.ISO_8859_1);
			Duration took = Duration.ofNanos(System.nanoTime() - start);
			if (!text.startsWith("HTTP/1.1 ")) {
				return new Answer(-1, text, took);
			}
			return new Answer(Integer.parseInt(text.substring(9, 12)), text, took);
		}
		catch (IOException ex) {
			return new Answer(-1, ex.toString(), Duration.ofNanos(System.nanoTime() - start));
		}
	}

	/**
	 * An answer.
	 *
	 * @param status the status, or -1
	 * @param text what was read
	 * @param took how long it took
	 */
	record Answer(int status, String text, Duration took) {
	}

}
