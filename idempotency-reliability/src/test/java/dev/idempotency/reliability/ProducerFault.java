package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.jspecify.annotations.Nullable;

/**
 * Runs inside a replica, on its producers (a producer interceptor, from a directory of
 * its own on the replica's class path): once the suite creates the replica's trigger
 * file, the next acknowledgement of a record throws an {@link Error} on the producer's
 * network thread, which ends that thread, as a {@link StackOverflowError} in the
 * producer's own code does. The producer still takes records and never sends them.
 * Deleting the file first makes one producer die per trigger.
 */
public class ProducerFault implements ProducerInterceptor<Object, Object> {

	/** The system property of a replica that names its trigger file. */
	static final String TRIGGER = "reliability.producer-fault";

	private @Nullable Path trigger;

	@Override
	public void configure(Map<String, ?> configs) {
		String file = System.getProperty(TRIGGER);
		this.trigger = (file != null) ? Path.of(file) : null;
	}

	@Override
	public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
		return record;
	}

	@Override
	public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
		Path file = this.trigger;
		if (file == null) {
			return;
		}
		try {
			Files.delete(file);
		}
		catch (IOException ex) {
			// No trigger, or another producer took it.
			return;
		}
		throw new ProducerKilled();
	}

	@Override
	public void close() {
	}

	/**
	 * What ends the producer's network thread.
	 */
	static final class ProducerKilled extends Error {

		private static final long serialVersionUID = 1L;

		ProducerKilled() {
			super("The producer's network thread is killed by the reliability suite");
		}

	}

}
