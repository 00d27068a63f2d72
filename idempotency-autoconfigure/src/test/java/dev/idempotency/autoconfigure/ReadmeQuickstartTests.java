package dev.idempotency.autoconfigure;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.NodeList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The quickstart of the README, as a user copies it: its Java snippets compile together
 * as written, against the modules and the Spring Boot starters the pom fragment names,
 * and the fragment names artifacts that this build publishes.
 */
class ReadmeQuickstartTests {

	private static final Pattern BLOCK = Pattern.compile("```(java|xml)\\n(.*?)```", Pattern.DOTALL);

	private static final Pattern TYPE = Pattern
		.compile("^(?:public\\s+)?(?:final\\s+)?(?:class|record|interface)\\s+(\\w+)", Pattern.MULTILINE);

	@Test
	void theQuickstartSnippetsCompileAsWritten() throws IOException {
		List<String> snippets = blocks("java");
		assertThat(snippets).hasSizeGreaterThanOrEqualTo(4);
		Path sources = Files.createTempDirectory(Path.of("target"), "readme-quickstart");
		List<Path> files = new ArrayList<>();
		for (String snippet : snippets) {
			Matcher type = TYPE.matcher(snippet);
			assertThat(type.find()).as("a compilation unit:%n%s", snippet).isTrue();
			assertThat(snippet).as("a package and its imports:%n%s", snippet).startsWith("package ");
			Path file = sources.resolve(type.group(1) + ".java");
			Files.writeString(file, snippet);
			files.add(file);
		}
		JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
		StringWriter diagnostics = new StringWriter();
		try (StandardJavaFileManager fileManager = compiler.getStandardFileManager(null, null,
				StandardCharsets.UTF_8)) {
			Path classes = Files.createDirectories(sources.resolve("classes"));
			boolean compiled = compiler
				.getTask(diagnostics, fileManager, null,
						List.of("-classpath", System.getProperty("java.class.path"), "-d", classes.toString(),
								"-proc:none", "--release", "17"),
						null, fileManager.getJavaFileObjectsFromPaths(files))
				.call();
			assertThat(compiled).as(diagnostics.toString()).isTrue();
		}
	}

	@Test
	void thePomFragmentImportsTheBomAndNamesTheStarterTheKafkaStarterAndTheTestModule() throws Exception {
		List<String> fragments = blocks("xml");
		assertThat(fragments).hasSize(1);
		Document pom = DocumentBuilderFactory.newInstance()
			.newDocumentBuilder()
			.parse(new ByteArrayInputStream(
					("<project>" + fragments.get(0) + "</project>").getBytes(StandardCharsets.UTF_8)));
		NodeList managed = pom.getElementsByTagName("dependencyManagement");
		assertThat(managed.getLength()).isOne();
		assertThat(managed.item(0).getTextContent()).contains("idempotency-bom").contains("import");
		List<String> artifacts = new ArrayList<>();
		NodeList ids = pom.getElementsByTagName("artifactId");
		for (int i = 0; i < ids.getLength(); i++) {
			artifacts.add(ids.item(i).getTextContent());
		}
		assertThat(artifacts).containsExactly("idempotency-bom", "idempotency-spring-boot-starter",
				"spring-boot-starter-kafka", "idempotency-test");
		for (String module : List.of("idempotency-bom", "idempotency-spring-boot-starter", "idempotency-test")) {
			assertThat(Path.of("..", module, "pom.xml")).exists();
		}
	}

	private static List<String> blocks(String language) throws IOException {
		String readme = Files.readString(Path.of("..", "README.md"));
		int start = readme.indexOf("\n## Quickstart");
		int end = readme.indexOf("\n## ", start + 1);
		Matcher block = BLOCK.matcher(readme.substring(start, end));
		List<String> blocks = new ArrayList<>();
		while (block.find()) {
			if (block.group(1).equals(language)) {
				blocks.add(block.group(2));
			}
		}
		return blocks;
	}

}
