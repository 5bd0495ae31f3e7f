/**
 * Formats a duration the way the reference system prints budgets in error texts (Go's
 * `time.Duration` form): `"1h0m0s"`, `"2m30s"`, `"1.5s"`, `"200ms"`, `"0s"`.
 */
export function formatDuration(ms: number): string {
  const total = Math.round(ms);
  if (total === 0) return "0s";
  const sign = total < 0 ? "-" : "";
  const abs = Math.abs(total);
  if (abs < 1000) return `${sign}${abs}ms`;
  const h = Math.floor(abs / 3_600_000);
  const m = Math.floor((abs % 3_600_000) / 60_000);
  const secMs = abs % 60_000;
  // Seconds with up to three decimals, trailing zeros dropped ("1.5s", not "1.500s").
  const s = (secMs / 1000).toFixed(3).replace(/\.?0+$/, "");
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}
