package dev.idempotency.autoconfigure.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.util.Assert;
import org.springframework.util.ClassUtils;

/**
 * Logs one line at startup, at INFO, with the idempotency features this application runs
 * and how its tables are made: what was switched on by the class path and the properties
 * is then visible without reading the condition report.
 */
class IdempotencyStartupLog implements SmartInitializingSingleton {

	private static final Log logger = LogFactory.getLog(IdempotencyStartupLog.class);

	private final ListableBeanFactory beanFactory;

	private final IdempotencyJdbcProperties properties;

	IdempotencyStartupLog(ListableBeanFactory beanFactory, IdempotencyJdbcProperties properties) {
		Assert.notNull(beanFactory, "beanFactory must not be null");
		Assert.notNull(properties, "properties must not be null");
		this.beanFactory = beanFactory;
		this.properties = properties;
	}

	@Override
	public void afterSingletonsInstantiated() {
		if (logger.isInfoEnabled()) {
			logger.info(line());
		}
	}

	String line() {
		List<String> features = new ArrayList<>();
		features.add("@Idempotent " + onOff("dev.idempotency.web.IdempotencyFilter"));
		features.add("@IdempotentListener " + onOff("dev.idempotency.kafka.IdempotentListenerAdvisor"));
		String outbox = "outbox " + onOff("dev.idempotency.outbox.Outbox");
		if (has("dev.idempotency.outbox.Outbox")) {
			outbox += " (relay " + onOff("dev.idempotency.outbox.OutboxRelay") + ")";
		}
		features.add(outbox);
		features.add("outbound calls " + onOff("dev.idempotency.outbound.OutboundCalls"));
		features.add("cleanup " + onOff("dev.idempotency.autoconfigure.ops.IdempotencyCleanup"));
		return "Idempotency: " + String.join(", ", features) + "; tables " + tables();
	}

	private String tables() {
		String made;
		if (this.beanFactory.containsBean("idempotencyFlywayMigrations")) {
			made = "by Flyway (history table " + this.properties.getFlyway().getTable() + ")";
		}
		else if (this.beanFactory.containsBean("idempotencyDataSourceScriptDatabaseInitializer")) {
			made = "by the schema script (initialize-schema="
					+ this.properties.getInitializeSchema().name().toLowerCase(Locale.ROOT) + ")";
		}
		else {
			made = "made elsewhere (initialize-schema="
					+ this.properties.getInitializeSchema().name().toLowerCase(Locale.ROOT) + ")";
		}
		return made + (this.properties.isVerifySchema() ? ", checked at startup" : ", not checked");
	}

	private String onOff(String type) {
		return has(type) ? "on" : "off";
	}

	private boolean has(String typeName) {
		ClassLoader classLoader = getClass().getClassLoader();
		if (!ClassUtils.isPresent(typeName, classLoader)) {
			return false;
		}
		return this.beanFactory.getBeanNamesForType(ClassUtils.resolveClassName(typeName, classLoader), true,
				false).length > 0;
	}

}
