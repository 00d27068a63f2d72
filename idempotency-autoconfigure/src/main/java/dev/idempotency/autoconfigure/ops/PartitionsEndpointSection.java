package dev.idempotency.autoconfigure.ops;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DailyPartitions.Partition;

/**
 * The {@code partitions} section of the {@code idempotency} endpoint, with
 * {@code idempotency.jdbc.partitioning=daily}: per partitioned table, its partitions with
 * their bounds, oldest first ({@code GET /actuator/idempotency/partitions}).
 */
final class PartitionsEndpointSection implements IdempotencyEndpointSection {

	private final List<DailyPartitions> tables;

	PartitionsEndpointSection(List<DailyPartitions> tables) {
		this.tables = List.copyOf(tables);
	}

	@Override
	public String name() {
		return "partitions";
	}

	@Override
	public Object read(Request request) {
		Map<String, Object> tables = new LinkedHashMap<>();
		for (DailyPartitions table : this.tables) {
			tables.put(table.getTable(), table.partitions().stream().map(PartitionsEndpointSection::describe).toList());
		}
		return Map.of("tables", tables);
	}

	private static Map<String, Object> describe(Partition partition) {
		Map<String, Object> description = new LinkedHashMap<>();
		description.put("name", partition.name());
		description.put("from", (partition.from() != null) ? partition.from().toString() : "MINVALUE");
		description.put("to", partition.to().toString());
		if (partition.detachPending()) {
			description.put("detachPending", true);
		}
		return description;
	}

}
