import type { SettledPayload } from "../protocol/records.ts";
import { AlreadySettled, isHarnessError } from "../errors.ts";
import { idFloor } from "../conversation/ids.ts";
import type { CancelStore } from "../store/store.ts";
import { budgetStart, type Cancellation, cancelledOutcome, type Submission } from "../store/submission.ts";
import { correlationOf } from "../ports/observer.ts";
import type { AttemptContext, EngineContext } from "./engine-context.ts";
import { isNamesOnly } from "../agent/names-only-agents.ts";
import { completeReservation } from "./settlement.ts";
import { taskTargetsOf } from "./subagents.ts";
import { pendingChildCalls, pendingChildren } from "./wake.ts";

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
  let settledAtOnce: boolean | undefined;
  try {
    ({ wasRunning, settled: settledAtOnce } = await ctx.store.cancelSubmission(sub.id, cancellation));
  } catch (err) {
    if (!isHarnessError(err, "claim_lost")) throw err;
    return alreadyEnded(await ctx.store.getSubmission(sub.id));
  }
  if (settledAtOnce) {
    // A delayed message that had not joined its session yet: settled by the store, no record.
    const outcome = cancelledOutcome(cancellation);
    ctx.onSettled(sub.id, outcome);
    ctx.observe({ type: "submission_settled", correlation: correlationOf(sub), payload: outcome });
    return { submissionId: sub.id, status: "cancelled", outcome };
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
  const settled = await completeReservation(ctx, reserved, outcome);
  return { submissionId: sub.id, status: "cancelled", outcome: settled };
}

/** The answer for a submission the store would not cancel: terminalizing or settled. */
function alreadyEnded(sub: Submission): CancelResult {
  const code = sub.outcome?.errorCode;
  if (code === "cancelled" || code === "cancelled_by_parent") return { submissionId: sub.id, status: "cancelled", outcome: sub.outcome };
  throw new AlreadySettled(sub.id, sub.outcome?.status ?? sub.status, { cancelLost: sub.cancelRequested });
}

/**
 * The orphan cascade (`onParentTerminal: "cancel_children"`): a parent that settled cancels its
 * unsettled children with `cancelled_by_parent`: a queued or waiting child settles at once, a
 * running one stops at its next safe point. Settled children are left alone. Only a parent that
 * may have children is looked at (its agent has the `task` tool, or it was waiting on calls), so
 * other settlements cost no read. A settlement runs it inside its reservation, before its finalize
 * (`EngineContext.cascade`), so a crash before it leaves a `terminalizing` row whose recoverer
 * cascades.
 */
export async function cascadeToChildren(ctx: AttemptContext, parent: Submission): Promise<number> {
  if (ctx.subagents?.limits.onParentTerminal === "leave_running") return 0;
  const hasPending = pendingChildCalls(parent).length > 0;
  // A process that knows the agent by name only (the http and sweeper functions) does not know
  // its policy: it looks for the children of every parent it settles (cancels and recoveries: rare).
  const mayHaveChildren =
    hasPending ||
    taskTargetsOf(ctx.subagents, parent.sessionKey.agent, parent.depth) !== undefined ||
    isNamesOnly(ctx.definitions.get(parent.sessionKey.agent));
  if (!mayHaveChildren) return 0;
  // The parent's own records name its children exactly (a `task_spawned` per spawn, read from
  // when it joined its session's order, `budgetStart`, so a delayed message does not read what the
  // session wrote while it waited); its pending calls name those whose record a crash may have
  // lost; the listing (an index that may lag a just-admitted child) adds any other.
  const named = new Set<string>();
  const own = await ctx.store.readRecords(parent.conversationId, idFloor(budgetStart(parent) - OWN_RECORDS_SKEW_MS));
  for (const r of own) if (r.kind === "task_spawned" && r.submissionId === parent.id) named.add(r.payload.childSubmissionId);
  const unsettled = new Map<string, Submission>();
  if (hasPending) for (const { child } of await pendingChildren(ctx, parent)) if (child) unsettled.set(child.id, child);
  for (const child of await ctx.store.listChildSubmissions(parent.id, { unsettledOnly: true })) unsettled.set(child.id, child);
  for (const id of named) {
    if (unsettled.has(id)) continue;
    try {
      unsettled.set(id, await ctx.store.getSubmission(id));
    } catch (err) {
      if (!isHarnessError(err, "submission_not_found")) throw err;
    }
  }
  let cancelled = 0;
  for (const child of unsettled.values()) {
    if (child.status === "settled" || child.status === "terminalizing") continue;
    if (await cancelChild(ctx, child, "parent settled")) cancelled++;
  }
  return cancelled;
}

/** How far before it joined its session's order a submission's first record may be minted (clocks of different processes). */
const OWN_RECORDS_SKEW_MS = 60_000;

/**
 * Cancels one child for its parent. A child that settled on its own after it was read (the
 * store refuses the cancel; its own outcome stands) is left alone, so one child's timing never
 * stops the cascade of the others, nor the parent's settlement or the sweep that runs it.
 */
export async function cancelChild(ctx: AttemptContext, child: Submission, reason: string): Promise<boolean> {
  try {
    await cancelSubmission(ctx, child, cancellationFor(reason, "cancelled_by_parent"));
    return true;
  } catch (err) {
    if (isHarnessError(err, "already_settled") || isHarnessError(err, "submission_not_found")) return false;
    throw err;
  }
}

/**
 * A child claimed after its parent settled (the parent's cascade was lost to a crash): the
 * cancellation it settles with at once, or undefined.
 */
export async function orphanCancellation(ctx: AttemptContext, child: Submission) {
  if (child.parentSubmissionId === undefined || ctx.subagents?.limits.onParentTerminal === "leave_running") return undefined;
  try {
    const parent = await ctx.store.getSubmission(child.parentSubmissionId);
    if (parent.status !== "settled" && parent.status !== "terminalizing") return undefined;
  } catch (err) {
    if (!isHarnessError(err, "submission_not_found")) throw err;
  }
  return cancellationFor("parent settled", "cancelled_by_parent");
}
