package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.zip.GZIPInputStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A replay means what the first response meant: its representation headers come with its
 * bytes, and a header value holding client text is stored as the server sent it.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpRepresentationTests extends IdempotentHttpTestSupport {

	@Test
	void aGzipResponseIsReplayedWithItsRepresentationHeaders() throws IOException {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/exports", order("export", 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(gunzip(first.body())).isEqualTo("{\"item\":\"export\"}");
		HttpResponse<byte[]> replay = this.http.post("/exports", order("export", 1), "Idempotency-Key", key);
		assertIdenticalReplay(replay, first);
		for (String name : List.of("Content-Encoding", "Content-Disposition", "Content-Language")) {
			assertThat(replay.headers().allValues(name)).as(name)
				.isNotEmpty()
				.isEqualTo(first.headers().allValues(name));
		}
		assertThat(this.gates.executions).hasValue(1);
	}

	@ParameterizedTest
	@ValueSource(strings = { "a\\nb", "a\\u0000b", "a\\rb", "a\\u007fb" })
	void clientTextWithAControlCharacterInAHeaderIsStoredAsTheServerSentIt(String escaped) {
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"" + escaped + "\",\"amount\":1}";
		HttpResponse<byte[]> withoutTheLibrary = this.http.post("/plain/links", json);
		assertThat(withoutTheLibrary.statusCode()).isEqualTo(201);
		HttpResponse<byte[]> first = this.http.post("/links", json, "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(first.headers().allValues("Location")).isEqualTo(withoutTheLibrary.headers().allValues("Location"));
		HttpResponse<byte[]> replay = this.http.post("/links", json, "Idempotency-Key", key);
		assertIdenticalReplay(replay, first);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(keyStatus(key)).isEqualTo("DONE");
	}

	private static String gunzip(byte[] bytes) throws IOException {
		try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(bytes))) {
			return new String(in.readAllBytes(), StandardCharsets.UTF_8);
		}
	}

}
