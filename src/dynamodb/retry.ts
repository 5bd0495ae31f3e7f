/**
 * Retrying, in two layers. The SDK layer retries what is safe to repeat blindly: throttling
 * (ThrottlingException, ProvisionedThroughputExceeded, …), network errors and 5xx, with capped
 * exponential backoff and full jitter. A conditional write that fails its condition is never
 * retried blindly: the store layer re-reads and decides (see `errors.ts`). The store layer
 * also re-runs a read-decide-write step whose transaction lost a race (TransactionConflict).
 */
import type { DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { DynamoStoreContended } from "./errors.ts";

export interface RetryPolicy {
  /** Total attempts per request, the first included (default 8). */
  maxAttempts?: number;
  /** Backoff base for network errors and 5xx, ms (default 25). */
  baseDelayMs?: number;
  /** Backoff base for throttling, ms (default 100). */
  throttlingBaseDelayMs?: number;
  /** Cap of one backoff, ms (default 5000). */
  maxDelayMs?: number;
  /**
   * Time one try may take until its response starts, ms (default: `clients.ts`). A response
   * that never arrives then fails the try, which is retried like a lost connection.
   */
  requestTimeoutMs?: number;
}

interface Token {
  getRetryCount(): number;
  getRetryDelay(): number;
}

/** The AWS SDK client's `retryStrategy` option. */
export type SdkRetryStrategy = NonNullable<DynamoDBClientConfig["retryStrategy"]>;

/**
 * An SDK retry strategy (the client's `retryStrategy`) with the policy above. Unlike the SDK's
 * standard strategy it has no shared retry quota: a burst of throttling must slow the store
 * down, not make it fail requests while the table scales.
 */
export function harnessRetryStrategy(policy: RetryPolicy = {}): SdkRetryStrategy {
  const maxAttempts = policy.maxAttempts ?? 8;
  const base = policy.baseDelayMs ?? 25;
  const throttlingBase = policy.throttlingBaseDelayMs ?? 100;
  const cap = policy.maxDelayMs ?? 5_000;
  const token = (count: number, delay: number): Token => ({
    getRetryCount: () => count,
    getRetryDelay: () => delay,
  });
  return {
    mode: "standard",
    acquireInitialRetryToken: async () => token(0, 0),
    refreshRetryTokenForRetry: async (previous: Token, info: { errorType: string; error?: unknown }) => {
      const retryable = info.errorType === "THROTTLING" || info.errorType === "TRANSIENT" || info.errorType === "SERVER_ERROR";
      const count = previous.getRetryCount() + 1;
      if (!retryable || count >= maxAttempts) throw info.error ?? new Error("not retryable");
      const b = info.errorType === "THROTTLING" ? throttlingBase : base;
      return token(count, jitter(b, count - 1, cap));
    },
    recordSuccess: () => {},
  } as SdkRetryStrategy;
}

/** Full-jitter exponential backoff: uniform in [0, min(cap, base·2^attempt)). */
export function jitter(baseMs: number, attempt: number, capMs: number): number {
  return Math.floor(Math.random() * Math.min(capMs, baseMs * 2 ** attempt));
}

/** Thrown by a step that lost a race and may simply be run again from a fresh read. */
export class RetryStep extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "RetryStep";
  }
}

/**
 * Runs `step` until it returns, re-running it (after a short jittered pause on the wall clock)
 * when it throws {@link RetryStep}. Gives up after `attempts` tries with the last error.
 */
export async function rerunOnRace<T>(what: string, step: () => Promise<T>, attempts = 12): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await step();
    } catch (error) {
      if (!(error instanceof RetryStep)) throw error;
      if (i + 1 >= attempts) throw new DynamoStoreContended(what, attempts, { cause: error });
      await new Promise((r) => setTimeout(r, 5 + jitter(10, Math.min(i, 6), 500)));
    }
  }
}
