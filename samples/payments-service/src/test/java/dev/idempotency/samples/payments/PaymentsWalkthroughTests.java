package dev.idempotency.samples.payments;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.idempotency.test.KafkaTest;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Runs the curl walk-through of the sample's README.md as written, against the running
 * sample: every {@code $ curl} command of its {@code console} blocks, in order, each
 * answer checked against the one shown under it, where {@code …} stands for anything. A
 * replay must be the same bytes as the first answer to the same command. A command sent
 * to the background ({@code &}) runs until the next command has been answered; its fraud
 * review is then ended at once instead of after its hold. One subclass per database: the
 * page's answers are the same on both.
 * <p>
 * Each context is closed after its class, so that its listener leaves the consumer group
 * that the next class's context joins.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "payments.review.hold=10m")
@KafkaTest
@DirtiesContext
abstract class PaymentsWalkthroughTests {

	private static final Path WALKTHROUGH = Path.of("README.md");

	private static final Pattern CONSOLE = Pattern.compile("```console\\n(.*?)```", Pattern.DOTALL);

	private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

	@LocalServerPort
	int port;

	@Autowired
	JdbcTemplate jdbc;

	@Autowired
	FraudReview review;

	@Test
	void theCurlWalkthroughAnswersAsDocumented() throws Exception {
		List<Step> steps = steps(Files.readString(WALKTHROUGH, StandardCharsets.UTF_8));
		assertThat(steps).as("steps of the walk-through").hasSizeGreaterThanOrEqualTo(9);
		Map<String, HttpResponse<String>> firstAnswers = new LinkedHashMap<>();
		Background background = null;
		for (Step step : steps) {
			Curl curl = Curl.parse(step.command());
			if (curl.background()) {
				background = new Background(step, send(curl));
				awaitInProgress(curl.header("Idempotency-Key"));
				continue;
			}
			HttpResponse<String> response = send(curl).get(60, TimeUnit.SECONDS);
			check(step, curl, response, firstAnswers.get(step.command()));
			firstAnswers.putIfAbsent(step.command(), response);
			if (background != null) {
				this.review.endHolds();
				HttpResponse<String> answer = background.response().get(60, TimeUnit.SECONDS);
				assertThat(answer.statusCode()).as(background.step().command()).isBetween(200, 299);
				firstAnswers.putIfAbsent(background.step().command(), answer);
				background = null;
			}
		}
		assertThat(background).as("a background command with nothing after it").isNull();
	}

	private void check(Step step, Curl curl, HttpResponse<String> response,
			@Nullable HttpResponse<String> firstAnswer) {
		String command = step.command();
		List<String> lines = step.expected();
		int body = 0;
		if (curl.include()) {
			Matcher status = Pattern.compile("HTTP/1\\.1 (\\d{3})").matcher(lines.get(0));
			assertThat(status.matches()).as("status line of " + command).isTrue();
			assertThat(response.statusCode()).as(command + "\n" + response.body())
				.isEqualTo(Integer.parseInt(status.group(1)));
			body = 1;
			for (; body < lines.size() && !lines.get(body).isEmpty(); body++) {
				String header = lines.get(body);
				int colon = header.indexOf(':');
				String name = header.substring(0, colon);
				String value = header.substring(colon + 1).trim();
				assertThat(response.headers().allValues(name)).as(name + " of " + command)
					.anySatisfy((actual) -> assertThat(actual).matches(pattern(value)));
				if (name.equalsIgnoreCase("Idempotent-Replayed")) {
					assertThat(firstAnswer).as("the first answer replayed by " + command).isNotNull();
					assertThat(response.body()).as("replay of " + command).isEqualTo(firstAnswer.body());
				}
			}
		}
		String expectedBody = String.join("\n", lines.subList(Math.min(body, lines.size()), lines.size())).trim();
		assertThat(response.body().trim()).as("body of " + command).matches(pattern(expectedBody));
	}

	private CompletableFuture<HttpResponse<String>> send(Curl curl) {
		HttpRequest.Builder request = HttpRequest
			.newBuilder(URI.create(curl.url().replace("localhost:8080", "http://localhost:" + this.port)))
			.timeout(Duration.ofSeconds(60))
			.method(curl.method(), (curl.data() != null) ? HttpRequest.BodyPublishers.ofString(curl.data())
					: HttpRequest.BodyPublishers.noBody());
		curl.headers().forEach(request::header);
		return this.http.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString());
	}

	/**
	 * Wait until the background request holds its key, so that the next one finds it in
	 * use.
	 */
	private void awaitInProgress(String key) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
		while (inProgress(key) == 0) {
			assertThat(System.nanoTime()).as("key " + key + " in progress within 60 s").isLessThan(deadline);
			Thread.sleep(20);
		}
	}

	private int inProgress(String key) {
		Integer count = this.jdbc.queryForObject(
				"SELECT count(*) FROM idempotency_key WHERE idempotency_key = ? AND status = 'IN_PROGRESS'",
				Integer.class, key);
		return (count != null) ? count : 0;
	}

	/**
	 * The expected text as a pattern: {@code …} stands for anything, the rest is literal.
	 */
	private static String pattern(String expected) {
		StringBuilder pattern = new StringBuilder("(?s)");
		String[] parts = expected.split("…", -1);
		for (int i = 0; i < parts.length; i++) {
			if (i > 0) {
				pattern.append(".*?");
			}
			pattern.append(Pattern.quote(parts[i]));
		}
		return pattern.toString();
	}

	private static List<Step> steps(String markdown) {
		List<Step> steps = new ArrayList<>();
		Matcher block = CONSOLE.matcher(markdown);
		while (block.find()) {
			String command = null;
			List<String> expected = new ArrayList<>();
			for (String line : block.group(1).split("\n", -1)) {
				if (line.startsWith("$ ")) {
					if (command != null) {
						steps.add(new Step(command, trimmed(expected)));
					}
					command = line.substring(2);
					expected = new ArrayList<>();
				}
				else if (command != null) {
					expected.add(line);
				}
			}
			if (command != null) {
				steps.add(new Step(command, trimmed(expected)));
			}
		}
		return steps;
	}

	private static List<String> trimmed(List<String> lines) {
		List<String> copy = new ArrayList<>(lines);
		while (!copy.isEmpty() && copy.get(copy.size() - 1).isEmpty()) {
			copy.remove(copy.size() - 1);
		}
		return copy;
	}

	record Step(String command, List<String> expected) {
	}

	record Background(Step step, CompletableFuture<HttpResponse<String>> response) {
	}

	/**
	 * The part of curl's command line that the walk-through uses; anything else fails the
	 * test, so that the page shows only commands that were run.
	 */
	record Curl(String method, String url, Map<String, String> headers, @Nullable String data, boolean include,
			boolean background) {

		String header(String name) {
			String value = this.headers.get(name);
			assertThat(value).as(name + " header").isNotNull();
			return value;
		}

		static Curl parse(String command) {
			List<String> words = words(command);
			assertThat(words.get(0)).as(command).isEqualTo("curl");
			String method = null;
			String url = null;
			Map<String, String> headers = new LinkedHashMap<>();
			String data = null;
			boolean include = false;
			boolean background = false;
			for (int i = 1; i < words.size(); i++) {
				String word = words.get(i);
				switch (word) {
					case "-s" -> {
					}
					case "-i" -> include = true;
					case "-X" -> method = words.get(++i);
					case "-H" -> {
						String header = words.get(++i);
						int colon = header.indexOf(':');
						headers.put(header.substring(0, colon).trim(), header.substring(colon + 1).trim());
					}
					case "-d" -> data = words.get(++i);
					case "&" -> background = true;
					default -> {
						if (word.startsWith("-") || url != null) {
							fail("The walk-through uses what its test does not run: " + word + " in " + command);
						}
						url = word;
					}
				}
			}
			assertThat(url).as("URL of " + command).isNotNull();
			if (method == null) {
				method = (data != null) ? "POST" : "GET";
			}
			return new Curl(method, url, headers, data, include, background);
		}

		/**
		 * Split as a shell would: words apart at spaces, single quotes taken literally.
		 */
		private static List<String> words(String command) {
			List<String> words = new ArrayList<>();
			StringBuilder word = null;
			boolean quoted = false;
			for (char c : command.toCharArray()) {
				if (quoted) {
					if (c == '\'') {
						quoted = false;
					}
					else {
						word.append(c);
					}
				}
				else if (c == '\'') {
					quoted = true;
					word = (word != null) ? word : new StringBuilder();
				}
				else if (c == ' ') {
					if (word != null) {
						words.add(word.toString());
						word = null;
					}
				}
				else {
					word = (word != null) ? word : new StringBuilder();
					word.append(c);
				}
			}
			assertThat(quoted).as("unterminated quote in " + command).isFalse();
			if (word != null) {
				words.add(word.toString());
			}
			return words;
		}

	}

}
