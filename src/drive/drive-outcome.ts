import { isContextOverflow, isRetryableAssistantError, type AssistantMessage } from "@earendil-works/pi-ai";
import type { WaitEntry } from "../store/submission.ts";
import { formatDuration } from "./duration.ts";
import type { SubmissionUsage } from "./submission-usage.ts";
import { backpressureOf, credentialRefusalOf, type Backpressure, type ProviderExchange } from "./provider-backpressure.ts";

/** How a drive ended. A settling outcome carries what the submission consumed so far (`usage`). */
export type DriveOutcome =
  | { kind: "completed"; result?: unknown; usage?: SubmissionUsage }
  /** Stopped where the next step is a model call (the log ends with tool results or an injected user message). */
  | { kind: "continuation" }
  /** Worth a fresh attempt (charged): `status` is the provider's HTTP status when it answered. */
  | { kind: "transient"; error: string; status?: number }
  /** The provider refused for now or was unreachable: wait, then go on without charging an attempt. */
  | ({ kind: "backpressure" } & Backpressure)
  | {
      kind: "failed";
      errorCode: "run_failed" | "result_schema_invalid" | "timeout_exceeded" | "context_overflow" | "cancelled" | "cancelled_by_parent";
      error: string;
      usage?: SubmissionUsage;
      /** Leave the submission's messages out of later projections (see `SettledPayload.excludedFromContext`). */
      excludedFromContext?: true;
    }
  | { kind: "interrupted" }
  /** Suspended on `task` calls (their children run): park the submission until their outcomes arrive. */
  /** Suspended on calls answered from outside the run (children, approvals, callbacks): the engine parks it. */
  | { kind: "waiting"; entries: WaitEntry[] };

/** True for an assistant message that ended in a provider error or was aborted. */
export function isFailedStop(message: AssistantMessage): boolean {
  return message.stopReason === "error" || message.stopReason === "aborted";
}

/**
 * How an operation ended, from its last assistant message (pi resolves `continue()` on provider
 * errors, so the message says it): `undefined` when the model stopped normally; backpressure
 * when the provider refused for now or could not be reached (`exchange`: what the turn's HTTP
 * exchange showed); transient for a timed-out turn (`turnTimeout`), an abort or a retryable
 * provider error; failed otherwise.
 */
export function classifyLastAssistant(
  message: AssistantMessage | undefined,
  context: { turnTimeout?: string; contextWindow?: number; exchange?: ProviderExchange },
): DriveOutcome | undefined {
  if (message === undefined || !isFailedStop(message)) return undefined;
  const text = message.errorMessage || `model turn ended with stop reason "${message.stopReason}"`;
  if (context.turnTimeout !== undefined) return { kind: "transient", error: context.turnTimeout };
  if (message.stopReason === "aborted") return { kind: "transient", error: text };
  // The drive compacts and retries; this is what settles when it cannot.
  if (isContextOverflow(message, context.contextWindow)) return { kind: "failed", errorCode: "context_overflow", error: text };
  // A refused key is refused again on every try: fail now, saying so (ADR 0053).
  const refused = credentialRefusalOf(message, context.exchange);
  if (refused !== undefined) return { kind: "failed", errorCode: "run_failed", error: refused };
  const backpressure = backpressureOf(message, context.exchange);
  if (backpressure !== undefined) return { kind: "backpressure", ...backpressure };
  if (isRetryableAssistantError(message)) {
    const exchange = context.exchange;
    return exchange !== undefined && "status" in exchange ? { kind: "transient", error: text, status: exchange.status } : { kind: "transient", error: text };
  }
  return { kind: "failed", errorCode: "run_failed", error: text };
}

/** True for the outcome of a model turn that overflowed the context window. */
export function isOverflow(outcome: DriveOutcome | undefined): outcome is Extract<DriveOutcome, { kind: "failed" }> {
  return outcome?.kind === "failed" && outcome.errorCode === "context_overflow";
}

/** The durability deadline passed mid-run. */
export function timeoutOutcome(submissionTimeoutMs: number): DriveOutcome {
  return {
    kind: "failed",
    errorCode: "timeout_exceeded",
    error: `durability timeout exceeded mid-run (budget ${formatDuration(submissionTimeoutMs)})`,
  };
}

/** The `error` an `operation_ended` event reports for an operation's outcome ("" when it went on or completed). */
export function operationError(outcome: DriveOutcome | undefined): string {
  if (outcome === undefined || outcome.kind === "continuation" || outcome.kind === "completed" || outcome.kind === "waiting") return "";
  return outcome.kind === "interrupted" ? "interrupted" : outcome.error;
}
