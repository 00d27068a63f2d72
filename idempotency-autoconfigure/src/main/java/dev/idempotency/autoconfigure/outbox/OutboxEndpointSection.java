package dev.idempotency.autoconfigure.outbox;

import java.util.List;

import dev.idempotency.autoconfigure.ops.IdempotencyEndpointSection;
import dev.idempotency.outbox.OutboxDeadRows;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.util.Assert;

/**
 * The {@code outbox} section of the {@code idempotency} endpoint: {@code GET} lists the
 * DEAD rows (never their payload), {@code POST .../outbox/redrive} with an {@code id}
 * re-drives one, {@code POST .../outbox/redrive-all} re-drives them all. A re-drive wakes
 * the relay so that the rows go out at once.
 */
class OutboxEndpointSection implements IdempotencyEndpointSection {

	static final int DEFAULT_LIMIT = 100;

	static final int MAX_LIMIT = 1000;

	private final OutboxDeadRows deadRows;

	private final Runnable afterRedrive;

	OutboxEndpointSection(OutboxDeadRows deadRows, Runnable afterRedrive) {
		Assert.notNull(deadRows, "deadRows must not be null");
		Assert.notNull(afterRedrive, "afterRedrive must not be null");
		this.deadRows = deadRows;
		this.afterRedrive = afterRedrive;
	}

	@Override
	public String name() {
		return "outbox";
	}

	@Override
	public Object read(Request request) {
		Integer limit = request.limit();
		if (limit != null && limit <= 0) {
			throw new InvalidEndpointRequestException("The 'limit' parameter must be positive", "Invalid limit");
		}
		List<OutboxDeadRows.DeadRow> rows = this.deadRows
			.list((limit != null) ? Math.min(limit, MAX_LIMIT) : DEFAULT_LIMIT);
		return new DeadRows(rows.size(), rows);
	}

	@Override
	public @Nullable Object write(String action, Request request) {
		int redriven;
		if ("redrive".equals(action)) {
			Long id = request.id();
			if (id == null) {
				throw new InvalidEndpointRequestException(
						"The 'id' parameter is required; use redrive-all to re-drive every dead row", "Missing id");
			}
			if (!this.deadRows.redrive(id)) {
				return null;
			}
			redriven = 1;
		}
		else if ("redrive-all".equals(action)) {
			redriven = this.deadRows.redriveAll();
		}
		else {
			return null;
		}
		if (redriven > 0) {
			this.afterRedrive.run();
		}
		return new Redriven(redriven);
	}

	/**
	 * The dead rows listed.
	 *
	 * @param count how many are listed
	 * @param rows the rows, oldest first
	 */
	record DeadRows(int count, List<OutboxDeadRows.DeadRow> rows) {

	}

	/**
	 * The outcome of a re-drive.
	 *
	 * @param redriven how many rows became PENDING again
	 */
	record Redriven(int redriven) {

	}

}
