package dev.idempotency.autoconfigure;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The arrows point one way: core, then web, kafka, outbox and outbound, then
 * autoconfigure. Only autoconfigure knows Spring Boot.
 */
@AnalyzeClasses(packages = "dev.idempotency", importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTests {

	@ArchTest
	static final ArchRule coreKnowsNoFeatureNorFramework = noClasses().that()
		.resideInAPackage("dev.idempotency.core..")
		.should()
		.dependOnClassesThat()
		.resideInAnyPackage("dev.idempotency.web..", "dev.idempotency.kafka..", "dev.idempotency.outbox..",
				"dev.idempotency.outbound..", "dev.idempotency.autoconfigure..", "org.springframework.boot..",
				"org.springframework.web..", "org.springframework.kafka..", "org.apache.kafka..", "jakarta.servlet..");

	@ArchTest
	static final ArchRule featuresDoNotKnowSpringBoot = noClasses().that()
		.resideInAnyPackage("dev.idempotency.core..", "dev.idempotency.web..", "dev.idempotency.kafka..",
				"dev.idempotency.outbox..", "dev.idempotency.outbound..")
		.should()
		.dependOnClassesThat()
		.resideInAnyPackage("org.springframework.boot..", "dev.idempotency.autoconfigure..");

	@ArchTest
	static final ArchRule featuresAreIndependentOfEachOther = slices().matching("dev.idempotency.(web|kafka|outbox)..")
		.should()
		.notDependOnEachOther();

	@ArchTest
	static final ArchRule noPackageCycles = slices().matching("dev.idempotency.(**)").should().beFreeOfCycles();

}
