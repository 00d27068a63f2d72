package dev.idempotency.autoconfigure.web;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A client for the test server: {@link HttpClient} for well-formed requests, a raw socket
 * for headers that no well-behaved client would send.
 */
final class TestHttp {

	private final HttpClient client = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(10))
		.build();

	private final int port;

	TestHttp(int port) {
		this.port = port;
	}

	HttpResponse<byte[]> post(String path, String json, String... headers) {
		return send(path, HttpRequest.BodyPublishers.ofString(json), withContentType("application/json", headers));
	}

	/**
	 * Send a POST with the given body and headers, which name the content type if any.
	 */
	HttpResponse<byte[]> send(String path, HttpRequest.BodyPublisher body, String... headers) {
		return exchange("POST", path, body, headers);
	}

	HttpResponse<byte[]> get(String path, String... headers) {
		return exchange("GET", path, HttpRequest.BodyPublishers.noBody(), headers);
	}

	/**
	 * Send a request of any method with the given body and headers, which name the
	 * content type if any.
	 */
	HttpResponse<byte[]> exchange(String method, String path, HttpRequest.BodyPublisher body, String... headers) {
		HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
			.timeout(Duration.ofSeconds(60))
			.method(method, body);
		for (int i = 0; i < headers.length; i += 2) {
			request.header(headers[i], headers[i + 1]);
		}
		try {
			return this.client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Send a POST whose body is sent in chunks, without a {@code Content-Length}.
	 */
	HttpResponse<byte[]> postChunked(String path, byte[] body, String... headers) {
		HttpRequest.BodyPublisher chunked = HttpRequest.BodyPublishers
			.fromPublisher(HttpRequest.BodyPublishers.ofByteArray(body));
		return send(path, chunked, withContentType("application/json", headers));
	}

	/**
	 * Announce a body of {@code contentLength} bytes, send only its first
	 * {@code sentBytes}, and read the status the server answers with.
	 * @return the status code
	 */
	int postAnnouncingMoreThanIsSent(String path, long contentLength, int sentBytes, String key) {
		try (Socket socket = new Socket("localhost", this.port)) {
			socket.setSoTimeout(30_000);
			OutputStream out = socket.getOutputStream();
			out.write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
					+ "Content-Length: " + contentLength + "\r\nIdempotency-Key: " + key + "\r\n\r\n")
				.getBytes(StandardCharsets.US_ASCII));
			out.write(new byte[sentBytes]);
			out.flush();
			return readStatus(socket.getInputStream());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private static String[] withContentType(String contentType, String... headers) {
		String[] all = new String[headers.length + 2];
		all[0] = "Content-Type";
		all[1] = contentType;
		System.arraycopy(headers, 0, all, 2, headers.length);
		return all;
	}

	private static int readStatus(InputStream in) throws IOException {
		ByteArrayOutputStream statusLine = new ByteArrayOutputStream();
		for (int b = in.read(); b != -1 && b != '\n'; b = in.read()) {
			statusLine.write(b);
		}
		String line = statusLine.toString(StandardCharsets.US_ASCII);
		return Integer.parseInt(line.split(" ")[1]);
	}

	/**
	 * Send a POST whose extra header lines are written byte for byte.
	 * @return the status code
	 */
	int rawPost(String path, String json, byte[] headerLines) {
		byte[] body = json.getBytes(StandardCharsets.UTF_8);
		try (Socket socket = new Socket("localhost", this.port)) {
			socket.setSoTimeout(30_000);
			OutputStream out = socket.getOutputStream();
			out.write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
					+ "Content-Length: " + body.length + "\r\nConnection: close\r\n")
				.getBytes(StandardCharsets.US_ASCII));
			out.write(headerLines);
			out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
			out.write(body);
			out.flush();
			return readStatus(socket.getInputStream());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
