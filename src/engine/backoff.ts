/** Backoff before a fresh attempt after a transient error: base·2^(attempt−1), capped at 5 s. */
export function transientBackoffMs(baseMs: number, attemptCount: number, capMs = 5_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attemptCount - 1));
}
