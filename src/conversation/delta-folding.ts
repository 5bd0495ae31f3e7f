/**
 * Lean history (ADR 0034): once a submission has settled, its streaming delta records are
 * redundant (the `assistant_message_completed` records hold the text they streamed), so a store
 * removes them after a retention delay and storage and replays stop paying for every fragment.
 */

/** How long settled deltas are kept by default: an hour, long enough for any reader tailing a run to catch up. */
export const DEFAULT_DELTA_RETENTION_MS = 60 * 60 * 1000;

/**
 * The shortest `deltaRetentionMs` on DynamoDB (and the construct's `deltaRetention`): there a
 * turn's deltas fold counted from the turn's start, and a live reader must get them while the
 * turn (bounded at 10 minutes by default) still streams.
 */
export const MIN_DYNAMO_DELTA_RETENTION_MS = 15 * 60_000;

/**
 * A valid `deltaRetentionMs` store option (default {@link DEFAULT_DELTA_RETENTION_MS};
 * `Infinity` keeps deltas), or a `RangeError` naming it.
 */
export function deltaRetentionOf(value: number | undefined, minimumMs = 0): number {
  if (value === undefined) return DEFAULT_DELTA_RETENTION_MS;
  if (typeof value !== "number" || !(value >= minimumMs)) {
    throw new RangeError(`deltaRetentionMs must be a number of milliseconds of at least ${minimumMs} (Infinity keeps deltas), got ${String(value)}`);
  }
  return value;
}
