import type { SettledPayload } from "../protocol/records.ts";
import { AlreadySettled, isHarnessError } from "../errors.ts";
import type { CancelStore } from "../store/store.ts";
import { type Cancellation, cancelledOutcome, type Submission } from "../store/submission.ts";
import type { AttemptContext, EngineContext } from "./engine-context.ts";
import { completeReservation } from "./settlement.ts";

/** The reason of a cancel that names none. */
export const DEFAULT_CANCEL_REASON = "cancelled by request";

/** What a cancel came to. */
export interface CancelResult {
  submissionId: string;
  /**
   * `cancelled`: settled failed with `outcome` (a submission cancelled behind its session's head
   * has its settlement record written when its predecessors have settled); `cancelling`: it was
   * running and stops at its next safe point, then settles the same way.
   */
  status: "cancelled" | "cancelling";
  outcome?: SettledPayload;
}

/** The cancellation of a cancel with `reason` (default {@link DEFAULT_CANCEL_REASON}). */
export function cancellationFor(reason?: string, errorCode: Cancellation["errorCode"] = "cancelled"): Cancellation {
  return { errorCode, error: `cancelled: ${reason || DEFAULT_CANCEL_REASON}` };
}

/**
 * Cancels `sub` (a row its caller has read): a queued or waiting one has its settlement
 * reserved by the store with the cancellation's outcome, and this writes the record and finalizes
 * at once when it is its session's head (a recoverer finishes it should this process die); a
 * running one is flagged, and its owner learns it from its next lease renewal (at once when the
 * attempt runs in this process) and stops like a failed halt. Idempotent: a submission already
 * cancelled answers `cancelled` again; one settled otherwise is `AlreadySettled`. Reused by the
 * orphan cascade with `errorCode: "cancelled_by_parent"`.
 */
export async function cancelSubmission(
  ctx: AttemptContext & EngineContext<CancelStore & AttemptContext["store"]>,
  sub: Submission,
  cancellation: Cancellation,
): Promise<CancelResult> {
  let wasRunning: boolean;
  try {
    ({ wasRunning } = await ctx.store.cancelSubmission(sub.id, cancellation));
  } catch (err) {
    if (!isHarnessError(err, "claim_lost")) throw err;
    return alreadyEnded(await ctx.store.getSubmission(sub.id));
  }
  if (wasRunning) {
    ctx.heartbeats?.get(sub.id)?.();
    return { submissionId: sub.id, status: "cancelling" };
  }
  await ctx.faults?.("cancel_reserved", sub.id);
  const outcome = cancelledOutcome(cancellation);
  // As the store left it: terminalizing, no attempt (a queued or waiting row holds no lease).
  const { attemptId: _attempt, ownerId: _owner, leaseExpiresAt: _lease, waitUntil: _wait, ...rest } = sub;
  const reserved: Submission = { ...rest, status: "terminalizing", cancelRequested: true, cancellation, outcome };
  // Behind the head its record must follow its predecessors': their settlement hands on to it.
  if ((await ctx.store.getSessionHead(sub.sessionKey))?.id !== sub.id) return { submissionId: sub.id, status: "cancelled", outcome };
  return { submissionId: sub.id, status: "cancelled", outcome: await completeReservation(ctx, reserved, outcome) };
}

/** The answer for a submission the store would not cancel: terminalizing or settled. */
function alreadyEnded(sub: Submission): CancelResult {
  const code = sub.outcome?.errorCode;
  if (code === "cancelled" || code === "cancelled_by_parent") return { submissionId: sub.id, status: "cancelled", outcome: sub.outcome };
  throw new AlreadySettled(sub.id, sub.outcome?.status ?? sub.status);
}
