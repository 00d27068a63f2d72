package dev.idempotency.benchmarks;

/**
 * One way of doing the same unit of work, measured against the others.
 */
interface Scenario {

	/**
	 * A name for the results table.
	 */
	String name();

	/**
	 * Do one unit of work on the calling thread.
	 * @param worker the worker thread's number, to keep ids apart
	 * @param sequence the unit's number within the worker
	 * @return how many events the unit processed (1, or the batch size)
	 */
	int run(int worker, long sequence);

}
