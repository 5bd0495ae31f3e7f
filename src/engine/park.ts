import { isHarnessError } from "../errors.ts";
import { correlationOf } from "../ports/observer.ts";
import type { Cancellation, Submission, WaitEntry } from "../store/submission.ts";
import { deliverStoredAnswers } from "./call-answers.ts";
import type { AttemptContext } from "./engine-context.ts";
import { earliestExpiry, firstWaitCheckAt } from "./wait-check.ts";
import { deliverSettledChildren } from "./wake.ts";

/**
 * Parks a submission whose drive suspended on wait entries (ADR 0025): `task` calls (children),
 * calls that wait for a person's approval, deferred calls that wait for a callback. running →
 * waiting with every entry's call pending (the store releases the lease; no heartbeat, no
 * invocation and no queue message is held while it waits). An answer may have come while the
 * submission was still running its tool batch (a child that settled, a decision, a callback): it
 * found the submission not waiting and delivered nothing, so right after the park the children's
 * rows and the calls' waits are read and what is answered is delivered here; an answer after the
 * park delivers itself. Either way the delivery that answers the last call requeues it. A lost
 * lease (`ClaimLost`) parks nothing: the submission's new owner parks it again.
 *
 * The wait ends by `maxChildWaitMs` (when it waits on children) and, at the latest, at the
 * submission's own `deadline` (admission + its submission timeout): waiting cannot stretch a
 * budget. Then the sweep answers every pending call as expired and requeues it; one whose budget
 * is spent settles `timeout_exceeded` at its claim. Each approval and callback also has its own
 * expiry (never past the deadline), answered at a wait check then. The first check (the lost-wake
 * backstop, `wait-check.ts`) is one settlement grace away, or at the earliest entry's expiry.
 *
 * A cancel requested since the attempt last renewed its lease makes the store refuse the park
 * (`CancelRequested`): the cancellation is answered, and the caller settles with it (a parked
 * run holds no lease, so nobody would tell it; its children would run on for the whole wait).
 */
export async function park(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string,
  entries: readonly WaitEntry[],
  deadline: number,
): Promise<"parked" | "lost" | { cancelled: Cancellation }> {
  const now = ctx.clock.now();
  const children = entries.some((e) => e.kind === "child");
  const maxChildWaitMs = children ? (ctx.subagents?.limits.maxChildWaitMs ?? 0) : 0;
  const waitUntil = maxChildWaitMs > 0 ? Math.min(now + maxChildWaitMs, deadline) : deadline;
  const pendingCalls = [...new Set(entries.flatMap((e) => (e.kind === "time" ? [] : [e.callId])))];
  const waitingFor = uniqueByCall(entries);
  const waitCheckAt = Math.min(firstWaitCheckAt(now, ctx.settlementGraceMs), earliestExpiry(waitingFor));
  try {
    await ctx.store.waitSubmission({ submissionId: sub.id, attemptId, pendingCalls, waitingFor, waitUntil, waitCheckAt });
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return "lost";
    if (!isHarnessError(err, "cancel_requested")) throw err;
    const row = await ctx.store.getSubmission(sub.id);
    return { cancelled: row.cancellation ?? { errorCode: "cancelled", error: "cancelled: cancelled by request" } };
  }
  ctx.observe({ type: "submission_waiting", correlation: correlationOf(sub, attemptId), pendingCalls, waitingFor });
  await ctx.faults?.("parked", sub.id);
  const { attemptId: _a, ownerId: _o, leaseExpiresAt: _l, ...rest } = sub;
  const parked: Submission = { ...rest, status: "waiting", pendingCalls, waitingFor, pendingResume: true };
  if (children) await deliverSettledChildren(ctx, parked);
  if (waitingFor.some((e) => e.kind === "approval" || e.kind === "callback")) await deliverStoredAnswers(ctx, parked);
  return "parked";
}

/** One entry per call (a crash may repeat a call's entry), in order. */
function uniqueByCall(entries: readonly WaitEntry[]): WaitEntry[] {
  const seen = new Set<string>();
  return entries.filter((e) => {
    if (e.kind === "time") return true;
    if (seen.has(e.callId)) return false;
    seen.add(e.callId);
    return true;
  });
}
