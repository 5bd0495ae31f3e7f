import type { RetryReason } from "../protocol/records.ts";
import { terminalText as one } from "./terminal-text.ts";

/** Each retry reason in a person's words (ADR 0053). */
const REASONS: Readonly<Record<RetryReason, string>> = {
  unreachable: "the model provider is unreachable",
  rate_limited: "the model provider is rate limiting",
  overloaded: "the model provider is overloaded",
  unavailable: "the model provider is unavailable",
  transient: "the last try failed",
};

/** Why a submission waits for its next try, in words: `the model provider is rate limiting (HTTP 429)`. */
export function retryReasonText(retry: { reason: RetryReason; status?: number }): string {
  const words = REASONS[retry.reason] ?? one(String(retry.reason));
  return retry.status === undefined ? words : `${words} (HTTP ${one(String(retry.status))})`;
}

/** An epoch ms or RFC 3339 time as the CLI prints times: ISO, to the second. */
export function retryTimeText(at: number | string): string {
  const ms = typeof at === "number" ? at : Date.parse(at);
  return Number.isFinite(ms) ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z") : one(String(at));
}
