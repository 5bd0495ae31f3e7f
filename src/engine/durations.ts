/**
 * Formats a duration the way the reference system's error messages do (Go's time.Duration:
 * "1h0m0s", "1m30s", "2.5s", "250ms"), since those messages are part of the wire contract.
 */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${trimFraction(rest)}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = trimFraction(rest / 1000);
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}

function trimFraction(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}

/** Backoff before a fresh attempt after a transient error: base·2^(attempt−1), capped. */
export function transientBackoffMs(baseMs: number, attemptCount: number, capMs = 5_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attemptCount - 1));
}
