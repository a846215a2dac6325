/**
 * Limits of the worker protocol, apart from the schemas in worker.ts: the worker SDK imports them, and it
 * must not load TypeBox (about 240 ms of a worker's cold start on a 2-core machine) for a number.
 */

/** The most results one job-done-batch request may carry. */
export const MAX_DONE_BATCH = 256
