// Imports nothing: the Lambda settings read it in every function without bundling Hono.

/**
 * Parses a comma-separated origin list (`CORS_ORIGINS`, `HARNESS_CORS_ORIGINS`): each an origin
 * `scheme://host[:port]` or `*`. Throws naming the first malformed entry. Empty → no CORS.
 */
export function parseCorsOrigins(value: string | undefined, variable = "CORS_ORIGINS"): string[] {
  const entries = (value ?? "").split(",").map((o) => o.trim()).filter(Boolean);
  for (const entry of entries) {
    if (entry === "*") continue;
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || url.origin !== entry) {
      throw new Error(`${variable}: ${JSON.stringify(entry)} is not an origin (scheme://host[:port], no path or trailing slash)`);
    }
  }
  return entries;
}
