package dev.idempotency.web;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The canonical form of a query in the route of a fingerprint, and which
 * {@code Content-Type} headers are media types.
 */
class RequestFingerprintsTests {

	@Test
	void parametersAreSortedByNameAndTheValuesOfOneNameKeepTheirOrder() {
		assertThat(RequestFingerprints.canonicalQuery("b=2&a=1&t=y&t=x")).isEqualTo("?a=1&b=2&t=y&t=x");
	}

	@Test
	void everyEncodingOfTheSameTextIsTheSame() {
		String canonical = RequestFingerprints.canonicalQuery("note=a b&city=K%C3%B6ln");
		assertThat(RequestFingerprints.canonicalQuery("note=a+b&city=K\u00f6ln")).isEqualTo(canonical);
		assertThat(RequestFingerprints.canonicalQuery("%6Eote=a%20b&city=K%c3%b6ln")).isEqualTo(canonical);
		assertThat(canonical).isEqualTo("?city=K%C3%B6ln&note=a+b");
	}

	@Test
	void emptyPairsAreDroppedAndANameWithoutValueHasAnEmptyOne() {
		assertThat(RequestFingerprints.canonicalQuery("&a&&b=&")).isEqualTo("?a=&b=");
		assertThat(RequestFingerprints.canonicalQuery("&&")).isEmpty();
		assertThat(RequestFingerprints.canonicalQuery(null)).isEmpty();
	}

	@Test
	void aQueryThatDoesNotDecodeCountsAsSent() {
		assertThat(RequestFingerprints.canonicalQuery("a=%G1")).isEqualTo("? a=%G1");
		assertThat(RequestFingerprints.canonicalQuery("a=%4")).isEqualTo("? a=%4");
		assertThat(RequestFingerprints.canonicalQuery("a=%FF")).isEqualTo("? a=%FF");
		assertThat(RequestFingerprints.canonicalQuery("a=%FE"))
			.isNotEqualTo(RequestFingerprints.canonicalQuery("a=%FF"));
	}

	@Test
	void mediaTypesAndNoHeaderAreAccepted() {
		assertThat(RequestFingerprints.contentTypeProblem(null)).isNull();
		assertThat(RequestFingerprints.contentTypeProblem("")).isNull();
		assertThat(RequestFingerprints.contentTypeProblem("application/json")).isNull();
		assertThat(RequestFingerprints.contentTypeProblem("Text/Plain; charset=ISO-8859-1")).isNull();
		assertThat(RequestFingerprints.contentTypeProblem("multipart/form-data; boundary=x")).isNull();
		assertThat(RequestFingerprints.contentTypeProblem("application/vnd.api+json")).isNull();
	}

	@Test
	void aWildcardAnUnparsableHeaderOrAnUnknownCharsetIsNoMediaType() {
		assertThat(RequestFingerprints.contentTypeProblem("*/*")).contains("wildcard");
		assertThat(RequestFingerprints.contentTypeProblem("application/*")).contains("wildcard");
		assertThat(RequestFingerprints.contentTypeProblem("*")).isNotNull();
		assertThat(RequestFingerprints.contentTypeProblem(";;;")).isNotNull();
		assertThat(RequestFingerprints.contentTypeProblem("text/")).isNotNull();
		assertThat(RequestFingerprints.contentTypeProblem("/json")).isNotNull();
		assertThat(RequestFingerprints.contentTypeProblem(" ")).isNotNull();
		assertThat(RequestFingerprints.contentTypeProblem("application/json; charset=no-such")).isNotNull();
		assertThat(RequestFingerprints.contentTypeProblem("application/json; charset=\"utf-8")).isNotNull();
	}

}
