package dev.idempotency.samples.crashdemo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CrashDemoTests {

	@Test
	void naiveListenerChargesTwiceAndIdempotentListenerOnce() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		PrintStream out = new PrintStream(output, true, StandardCharsets.UTF_8);
		List<CrashDemoRun.Result> results = new CrashDemoRun(new TeePrintStream(out)).run();
		assertThat(results).extracting(CrashDemoRun.Result::variant).containsExactly("naive", "idempotent");
		assertThat(results.get(0).charges()).isEqualTo(2);
		assertThat(results.get(0).total()).isEqualByComparingTo(new BigDecimal(2400));
		assertThat(results.get(1).charges()).isEqualTo(1);
		assertThat(results.get(1).total()).isEqualByComparingTo(new BigDecimal(1200));
		assertThat(CrashDemoRun.verdict(results)).isTrue();
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("naive: 2 charges, 2400 RUB")
			.contains("idempotent: 1 charge, 1200 RUB");
	}

	/**
	 * Shows the demo's progress in the test output too.
	 */
	private static final class TeePrintStream extends PrintStream {

		TeePrintStream(PrintStream copy) {
			super(new java.io.OutputStream() {
				@Override
				public void write(int b) {
					copy.write(b);
					System.out.write(b);
				}
			}, true, StandardCharsets.UTF_8);
		}

	}

}
