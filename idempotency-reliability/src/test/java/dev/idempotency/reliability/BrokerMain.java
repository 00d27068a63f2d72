package dev.idempotency.reliability;

import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * The Kafka broker of the suite, in a process of its own so that it can be stopped and
 * killed: one KRaft node (broker and controller) on fixed ports, its logs in a fixed
 * directory formatted on first start only, so that a restart finds its topics, records
 * and committed offsets again, as a real broker does. Arguments: the log directory, the
 * client port and the controller port.
 */
final class BrokerMain {

	private static final String CLUSTER_ID = "r3l1ab1l1tyCLUSTER0000";

	private BrokerMain() {
	}

	public static void main(String[] args) throws IOException {
		Path logDir = Path.of(args[0]);
		int port = Integer.parseInt(args[1]);
		int controllerPort = Integer.parseInt(args[2]);
		Files.createDirectories(logDir);
		Properties properties = new Properties();
		properties.setProperty("process.roles", "broker,controller");
		properties.setProperty("node.id", "1");
		properties.setProperty("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
		properties.setProperty("listeners",
				"PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
		properties.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
		properties.setProperty("controller.listener.names", "CONTROLLER");
		properties.setProperty("inter.broker.listener.name", "PLAINTEXT");
		properties.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
		properties.setProperty("log.dirs", logDir.toString());
		properties.setProperty("num.partitions", "3");
		properties.setProperty("auto.create.topics.enable", "true");
		properties.setProperty("offsets.topic.replication.factor", "1");
		properties.setProperty("offsets.topic.num.partitions", "3");
		properties.setProperty("transaction.state.log.replication.factor", "1");
		properties.setProperty("transaction.state.log.min.isr", "1");
		properties.setProperty("share.coordinator.state.topic.replication.factor", "1");
		properties.setProperty("share.coordinator.state.topic.min.isr", "1");
		properties.setProperty("group.initial.rebalance.delay.ms", "0");
		properties.setProperty("group.min.session.timeout.ms", "2000");
		Path config = logDir.resolveSibling("server.properties");
		try (Writer writer = Files.newBufferedWriter(config)) {
			properties.store(writer, "written by BrokerMain");
		}
		if (!Files.exists(logDir.resolve("meta.properties"))) {
			int formatted = kafka.tools.StorageTool.execute(
					new String[] { "format", "-t", CLUSTER_ID, "-c", config.toString(), "--ignore-formatted" },
					System.out);
			if (formatted != 0) {
				throw new IllegalStateException("Could not format " + logDir + ": " + formatted);
			}
		}
		kafka.Kafka.main(new String[] { config.toString() });
	}

}
