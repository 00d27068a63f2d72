package dev.idempotency.core.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class Sha256Tests {

	@Test
	void digestsAreTheStandardSha256() {
		assertThat(HexFormat.of().formatHex(Sha256.of("abc".getBytes(StandardCharsets.US_ASCII))))
			.isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	}

	@Test
	void eachDigestIsFreshAndItsOwn() {
		MessageDigest first = Sha256.digest();
		first.update("half-written".getBytes(StandardCharsets.US_ASCII));
		MessageDigest second = Sha256.digest();
		assertThat(second).isNotSameAs(first);
		assertThat(second.digest()).isEqualTo(Sha256.newInstance().digest());
	}

	@Test
	void aDigestThatCannotBeClonedIsNoPrototype() {
		assertThat(Sha256.cloneable(Sha256.newInstance())).isNotNull();
		assertThat(Sha256.cloneable(new Uncloneable())).isNull();
	}

	@Test
	void withoutAPrototypeEachDigestIsANewInstance() {
		MessageDigest digest = Sha256.digestFrom(null);
		assertThat(digest.getAlgorithm()).isEqualTo("SHA-256");
		assertThat(digest).isNotSameAs(Sha256.digestFrom(null));
		assertThat(digest.digest("abc".getBytes(StandardCharsets.US_ASCII)))
			.isEqualTo(Sha256.of("abc".getBytes(StandardCharsets.US_ASCII)));
	}

	private static final class Uncloneable extends MessageDigest {

		Uncloneable() {
			super("SHA-256");
		}

		@Override
		protected void engineUpdate(byte input) {
		}

		@Override
		protected void engineUpdate(byte[] input, int offset, int len) {
		}

		@Override
		protected byte[] engineDigest() {
			return new byte[32];
		}

		@Override
		protected void engineReset() {
		}

	}

}
