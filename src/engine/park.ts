import { isHarnessError } from "../errors.ts";
import { correlationOf } from "../ports/observer.ts";
import type { Cancellation, Submission } from "../store/submission.ts";
import type { AttemptContext } from "./engine-context.ts";
import { firstWaitCheckAt } from "./wait-check.ts";
import { deliverSettledChildren } from "./wake.ts";

/**
 * Parks a parent whose drive suspended on `task` calls: running → waiting with the calls pending
 * (the store releases the lease; no heartbeat, no invocation and no queue message is held while
 * it waits). A child that settled while the parent was still running found it not waiting and
 * delivered nothing, so the children's rows are read right after the park and the settled ones
 * delivered here; a child settling after the park delivers by itself. Either way the delivery
 * that answers the last call requeues the parent. A lost lease (`ClaimLost`) parks nothing: the
 * submission's new owner parks it again.
 *
 * The wait ends by `maxChildWaitMs` and, at the latest, at the submission's own `deadline` (admission
 * + its submission timeout): waiting cannot stretch a budget. Either way the sweep answers the
 * pending calls `task wait expired` and requeues the parent; one whose budget is spent then
 * settles `timeout_exceeded` at its claim, as any submission past its budget does. The wait's
 * first check (the lost-wake backstop, `wait-check.ts`) is one settlement grace away.
 *
 * A cancel requested since the attempt last renewed its lease makes the store refuse the park
 * (`CancelRequested`): the cancellation is answered, and the caller settles with it (a parked
 * run holds no lease, so nobody would tell it; its children would run on for the whole wait).
 */
export async function park(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string,
  calls: readonly string[],
  deadline: number,
): Promise<"parked" | "lost" | { cancelled: Cancellation }> {
  const now = ctx.clock.now();
  const maxChildWaitMs = ctx.subagents?.limits.maxChildWaitMs ?? 0;
  const waitUntil = maxChildWaitMs > 0 ? Math.min(now + maxChildWaitMs, deadline) : deadline;
  const pendingCalls = [...new Set(calls)];
  const waitCheckAt = firstWaitCheckAt(now, ctx.settlementGraceMs);
  try {
    await ctx.store.waitSubmission({ submissionId: sub.id, attemptId, pendingCalls, waitUntil, waitCheckAt });
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return "lost";
    if (!isHarnessError(err, "cancel_requested")) throw err;
    const row = await ctx.store.getSubmission(sub.id);
    return { cancelled: row.cancellation ?? { errorCode: "cancelled", error: "cancelled: cancelled by request" } };
  }
  ctx.observe({ type: "submission_waiting", correlation: correlationOf(sub, attemptId), pendingCalls });
  await ctx.faults?.("parked", sub.id);
  const { attemptId: _a, ownerId: _o, leaseExpiresAt: _l, ...rest } = sub;
  await deliverSettledChildren(ctx, { ...rest, status: "waiting", pendingCalls, pendingResume: true });
  return "parked";
}
