package dev.idempotency.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The table of a run: one row per scenario, printed at the end of each test class and
 * written to {@code target/reliability/summary.md}.
 */
final class Summary {

	private static final List<Row> rows = new ArrayList<>();

	private static final List<String> notes = new ArrayList<>();

	private Summary() {
	}

	static synchronized void add(Row row) {
		rows.add(row);
	}

	/** A line printed under the table: figures that do not fit its columns. */
	static synchronized void note(String note) {
		notes.add(note);
	}

	static synchronized String table() {
		StringBuilder table = new StringBuilder();
		table.append("| scenario | operations | faults injected | lost | doubled | stuck | misordered | unanswered "
				+ "| recovered without restart |\n");
		table.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
		for (Row row : rows) {
			table.append("| ")
				.append(row.scenario())
				.append(" | ")
				.append(row.operations())
				.append(" | ")
				.append(row.faults())
				.append(" | ")
				.append(row.lost())
				.append(" | ")
				.append(row.doubled())
				.append(" | ")
				.append(row.stuck())
				.append(" | ")
				.append(row.misordered())
				.append(" | ")
				.append(row.unanswered())
				.append(" | ")
				.append(row.recovered())
				.append(" |\n");
		}
		if (!notes.isEmpty()) {
			table.append('\n');
			notes.forEach((note) -> table.append("- ").append(note).append('\n'));
		}
		return table.toString();
	}

	static synchronized void print(Path workDir) {
		String table = table();
		System.out.println("\nReliability summary" + (Cluster.longRun() ? " (long run)" : "") + "\n\n" + table);
		try {
			Files.writeString(workDir.resolve("summary.md"), table);
		}
		catch (IOException ex) {
			System.out.println("Could not write the summary: " + ex);
		}
	}

	/**
	 * One scenario's figures.
	 *
	 * @param scenario what was done
	 * @param operations operations sent by the clients
	 * @param faults the faults injected
	 * @param lost acknowledged or committed work that vanished
	 * @param doubled work done twice
	 * @param stuck claims or rows left behind past their lease
	 * @param misordered records of one key out of commit order
	 * @param unanswered operations without a definitive answer within the client's bounds
	 * @param recovered whether the service came back without a restart of its own
	 */
	record Row(String scenario, long operations, String faults, int lost, int doubled, int stuck, int misordered,
			int unanswered, String recovered) {

		static Row of(String scenario, long operations, String faults, Checks.Findings findings, int unanswered,
				String recovered) {
			return new Row(scenario, operations, faults, findings.lost.size(), findings.doubled.size(),
					findings.stuck.size(), findings.misordered.size(), unanswered, recovered);
		}

	}

}
