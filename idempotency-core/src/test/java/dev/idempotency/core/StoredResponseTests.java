package dev.idempotency.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class StoredResponseTests {

	@Test
	void bodyIsWrittenAsStoredAndTheCallersArrayIsNotShared() throws IOException {
		byte[] body = "{\"id\":1}".getBytes(StandardCharsets.UTF_8);
		StoredResponse response = new StoredResponse(201, Map.of(), body);
		body[0] = 'x';
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		response.writeBodyTo(out);
		assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("{\"id\":1}");
		assertThat(response.bodyLength()).isEqualTo(8);
		response.body()[0] = 'x';
		assertThat(response.body()).asString(StandardCharsets.UTF_8).isEqualTo("{\"id\":1}");
	}

}
