package dev.idempotency.core.jdbc;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class HeaderCodecTests {

	@Test
	void headersSurviveTheRoundTripInOrderWithEveryValueColonsAndSpacesIncluded() {
		Map<String, List<String>> headers = new LinkedHashMap<>();
		headers.put("Location", List.of("http://example.com/a:b"));
		headers.put("Set-Cookie", List.of("a=1", " b=2 ", ""));
		headers.put("tenant", List.of("acme"));
		String text = HeaderCodec.encode(headers);
		assertThat(text).isEqualTo("Location: http://example.com/a:b\nSet-Cookie: a=1\nSet-Cookie:  b=2 \n"
				+ "Set-Cookie: \ntenant: acme\n");
		assertThat(HeaderCodec.decode(text)).containsExactlyEntriesOf(headers);
		assertThat(HeaderCodec.decode("")).isEmpty();
	}

	@Test
	void aHeaderThatWouldMakeTheTextAmbiguousIsRefused() {
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderCodec.encode(Map.of("a:b", List.of("v"))))
			.withMessage("header name must not contain ':' or line breaks");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderCodec.encode(Map.of("a\nb", List.of("v"))))
			.withMessage("header name must not contain ':' or line breaks");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderCodec.encode(Map.of("a", List.of("v\r\nX: y"))))
			.withMessage("header value must not contain line breaks");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderCodec.check(" ", "v"))
			.withMessage("header name must not be empty");
	}

	@Test
	void textThatIsNotInTheStoredFormIsRefusedRatherThanGuessed() {
		for (String text : List.of("no colon\n", ": no name\n", "Name:no space\n", "Name: v\r\n")) {
			assertThatIllegalArgumentException().as(text)
				.isThrownBy(() -> HeaderCodec.decode(text))
				.withMessageContaining("Malformed stored header line");
		}
	}

}
