import { DEFAULT_FLUSH_POLICY } from "../drive/delta-batcher.ts";

/**
 * The runtime's defaults, one place for every shape: `createRuntime` falls back to them, the
 * Lambda settings (`HARNESS_LEASE_MS`, `HARNESS_FLUSH_*`) and the examples read them.
 */
export const RUNTIME_DEFAULTS = {
  /** Lease per attempt; the heartbeat renews it every third. Also the settlement grace. */
  leaseMs: 30_000,
  /** Base of the transient-failure backoff. */
  claimIntervalMs: 250,
  /**
   * Delta batching: the spec's 1 KB / 200 ms, sized for a store where every write costs
   * (DynamoDB). An embedded store may flush smaller and sooner (the quickstart flushes each delta).
   */
  flushPolicy: DEFAULT_FLUSH_POLICY,
  /** How often a started runtime sweeps. */
  sweepIntervalMs: 5_000,
  /** Attempts running at once in one process. */
  concurrency: 64,
} as const;

/**
 * The longest one SSE response lasts before it ends itself (the client resumes with
 * Last-Event-ID and misses nothing), per shape:
 * - `embedded`: 15 min. An open connection costs the server nothing while the stream waits, so
 *   the bound only recycles connections (proxies, leaks) and the fewer reconnects the better.
 * - `serverless`: 5 min. On Lambda an open stream is billed function time even while it waits,
 *   a client's disconnect is invisible, and the stream must end before the http function's
 *   timeout (the `Harness` construct gives it this + 1 min); a reconnect costs one request.
 */
export const STREAM_MAX_MS = {
  embedded: 15 * 60_000,
  serverless: 5 * 60_000,
} as const;

/**
 * How an SSE stream polls the log for records appended by other processes, per shape (the first
 * interval, growing while nothing arrives up to the ceiling; `tailRecords`):
 * - `embedded`: appends of the server's own runtime wake a stream at once; the poll only finds
 *   those of another process sharing the store, so it can be slow.
 * - `serverless`: every record comes from a worker function, so the poll is what a viewer waits
 *   on: 100 ms while records arrive (a text delta reaches the client about 60 ms after the worker
 *   wrote it), 50 ms for a second after a record that precedes a first token, then backing off to
 *   1 s (one read unit a second) while a model thinks or a tool runs (docs/adr/0031).
 */
export const STREAM_POLL = {
  embedded: { pollMs: 250, maxPollMs: 1_000 },
  serverless: { pollMs: 100, maxPollMs: 1_000 },
} as const;
