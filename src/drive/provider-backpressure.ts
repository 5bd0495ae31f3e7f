import type { AssistantMessage, SimpleStreamOptions } from "@earendil-works/pi-ai";
import type { Clock } from "../ports/clock.ts";

/**
 * Provider backpressure: the provider said "not now" (429 rate limited, 503 or Anthropic's 529
 * unavailable or overloaded) or could not be reached at all (connection refused, DNS). This is
 * not a failure of the run: the next attempt waits at least as long as the provider asked, and
 * the wait counts against the submission's time budget, not its attempt budget.
 */
export interface Backpressure {
  reason: "rate_limited" | "overloaded" | "unavailable" | "unreachable";
  /** The provider's HTTP status, when it answered. */
  status?: number;
  /** How long the provider asked to wait (`retry-after-ms`, `Retry-After`, rate-limit resets). */
  retryAfterMs?: number;
  /** The failed turn's error, as the provider reported it. */
  error: string;
}

/** What the HTTP exchange of one model turn came to, as seen by the fetch under pi-ai. */
export type ProviderExchange =
  /** A response arrived (the last one, when a turn made several requests). */
  | { status: number; retryAfterMs?: number }
  /** The request failed before any response: `code` is the system error (`ECONNREFUSED`, …). */
  | { unreachable: string; host?: string };

const BACKPRESSURE_STATUS: Readonly<Record<number, Backpressure["reason"]>> = { 429: "rate_limited", 503: "unavailable", 529: "overloaded" };

/** System errors that mean "nothing is listening there (yet)": a server still starting, a DNS name not resolving. */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/**
 * Watches one model turn's HTTP exchange through the `fetch` option pi-ai hands to the vendor
 * SDKs (OpenAI, Anthropic, Google, Mistral): pi-ai's error message keeps the status but drops the
 * response headers, which carry the provider's `Retry-After`. Providers whose SDK takes no fetch
 * (Bedrock) are classified from the error message alone.
 */
export class ProviderWatch {
  readonly #clock: Clock;
  #last: ProviderExchange | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The current turn's last exchange, if the provider used the fetch. */
  get last(): ProviderExchange | undefined {
    return this.#last;
  }

  /** Stream options for a new turn: its fetch reports here (around the caller's own fetch, if any). */
  watch(options: SimpleStreamOptions | undefined): SimpleStreamOptions {
    this.#last = undefined;
    const inner = options?.fetch ?? globalThis.fetch;
    const fetch: typeof globalThis.fetch = async (input, init) => {
      let response: Response;
      try {
        response = await inner(input, init);
      } catch (err) {
        const code = systemErrorCode(err);
        if (code !== undefined && UNREACHABLE_CODES.has(code)) {
          const host = hostOf(input);
          this.#last = host === undefined ? { unreachable: code } : { unreachable: code, host };
        }
        throw err;
      }
      const retryAfterMs = response.ok ? undefined : retryAfterMsOf(response.headers, this.#clock.now());
      this.#last = retryAfterMs === undefined ? { status: response.status } : { status: response.status, retryAfterMs };
      return response;
    };
    return { ...options, fetch };
  }
}

/**
 * Backpressure, if the failed turn ended on it: from the observed exchange when there is one (a
 * stream that started and then broke is not backpressure, whatever its text says), else from the
 * error message of a request that streamed nothing (Bedrock's throttling and unavailability, a
 * connection refused).
 */
export function backpressureOf(message: AssistantMessage, exchange: ProviderExchange | undefined): Backpressure | undefined {
  if (message.stopReason !== "error") return undefined;
  const error = message.errorMessage || "provider error";
  if (exchange !== undefined) {
    if ("unreachable" in exchange) {
      // The SDKs say "Connection error.": where and why is what a person needs to fix it.
      const where = exchange.host === undefined ? "the model provider" : exchange.host;
      return { reason: "unreachable", error: `cannot reach ${where} (${exchange.unreachable}): ${error}` };
    }
    const reason = BACKPRESSURE_STATUS[exchange.status];
    if (reason === undefined) return undefined;
    const status = exchange.status;
    return exchange.retryAfterMs === undefined ? { reason, status, error } : { reason, status, error, retryAfterMs: exchange.retryAfterMs };
  }
  // Without an exchange only a request refused outright counts (nothing streamed), and only in
  // words a provider path is known to use: pi-ai's Bedrock prefixes, a system error code.
  if (message.content.length > 0) return undefined;
  if (message.api === "bedrock-converse-stream") {
    if (error.startsWith("Throttling error")) return { reason: "rate_limited", error };
    if (error.startsWith("Service unavailable")) return { reason: "unavailable", error };
  }
  if (/\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)\b/.test(error)) return { reason: "unreachable", error };
  return undefined;
}

/**
 * The failed turn's provider refused its credentials (401) or their permission (403): another
 * try sends the same key and gets the same answer, so the run fails at once, saying so (ADR 0053).
 * Only from an observed exchange: a status in an error's text may be anything's.
 */
export function credentialRefusalOf(message: AssistantMessage, exchange: ProviderExchange | undefined): string | undefined {
  if (message.stopReason !== "error" || exchange === undefined || !("status" in exchange)) return undefined;
  if (exchange.status !== 401 && exchange.status !== 403) return undefined;
  const what = exchange.status === 401 ? "refused the API key" : "refused access with this API key";
  return `the model provider ${what} (HTTP ${exchange.status}): check the provider's key variable; ${message.errorMessage || "no detail"}`;
}

/** Shortest and longest wait when the provider named none: geometric, from the time already waited. */
export const BACKPRESSURE_MIN_DELAY_MS = 1_000;
export const BACKPRESSURE_MAX_DELAY_MS = 60_000;

/**
 * How long to wait before the next attempt: what the provider asked for, else a quarter of the
 * time since admission (so waits grow geometrically without a counter: 1 s while the run is young,
 * then ×1.25 per round), within [1 s, 60 s]. Never less than a second (a provider that says
 * `Retry-After: 0` while refusing is not asked again at once).
 */
export function backpressureDelayMs(backpressure: Backpressure, sinceAdmissionMs: number): number {
  if (backpressure.retryAfterMs !== undefined) return Math.max(BACKPRESSURE_MIN_DELAY_MS, Math.ceil(backpressure.retryAfterMs));
  return Math.min(BACKPRESSURE_MAX_DELAY_MS, Math.max(BACKPRESSURE_MIN_DELAY_MS, Math.ceil(sinceAdmissionMs / 4)));
}

/**
 * The wait a failed response asks for, in ms from `now`: `retry-after-ms` (OpenAI, Anthropic),
 * else `Retry-After` (seconds or an HTTP date), else the latest reset of an exhausted rate limit
 * (OpenAI's `x-ratelimit-remaining-*: 0` with `x-ratelimit-reset-*` durations such as `6m0s`,
 * Anthropic's `anthropic-ratelimit-*-remaining: 0` with RFC 3339 `…-reset` times).
 */
export function retryAfterMsOf(headers: Headers, now: number): number | undefined {
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const retryAfter = headers.get("retry-after")?.trim();
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return Number.parseFloat(retryAfter) * 1000;
    const at = Date.parse(retryAfter);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  let latest: number | undefined;
  const consider = (wait: number | undefined) => {
    if (wait !== undefined && (latest === undefined || wait > latest)) latest = wait;
  };
  for (const limit of ["requests", "tokens", "input-tokens", "output-tokens"]) {
    if (headers.get(`x-ratelimit-remaining-${limit}`) === "0") consider(durationMs(headers.get(`x-ratelimit-reset-${limit}`)));
    if (headers.get(`anthropic-ratelimit-${limit}-remaining`) === "0") {
      const at = Date.parse(headers.get(`anthropic-ratelimit-${limit}-reset`) ?? "");
      if (Number.isFinite(at)) consider(Math.max(0, at - now));
    }
  }
  return latest;
}

/** A Go-style duration as OpenAI sends it (`1s`, `6m0s`, `20ms`, `1h2m3.5s`), in ms. */
function durationMs(text: string | null): number | undefined {
  if (!text) return undefined;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text.trim()) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  return parts.reduce((sum, p) => sum + Number.parseFloat(p[1]!) * unit[p[2]!]!, 0);
}

/** The host (and port) a fetch went to, if its input says. */
function hostOf(input: Parameters<typeof globalThis.fetch>[0]): string | undefined {
  try {
    return new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).host;
  } catch {
    return undefined;
  }
}

/** The system error code in an error's cause chain (undici wraps it: `fetch failed` → `connect ECONNREFUSED`). */
function systemErrorCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && current !== null && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && (code.startsWith("E") || code === "UND_ERR_CONNECT_TIMEOUT")) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
