import type { Submission } from "../store/submission.ts";
import { deliverStoredAnswers, expireCallWaits } from "./call-answers.ts";
import { cancelChild } from "./cancel.ts";
import type { AttemptContext } from "./engine-context.ts";
import { deliver, pendingChildren, settledOutcomeOf, TASK, TASK_WAIT_EXPIRED, wakeParent } from "./wake.ts";

/**
 * A parent's wait ran past its `waitUntil` (`maxChildWaitMs`, or its own budget). Each pending call is
 * answered: with its child's real outcome when the child has settled (its own wake was lost), or
 * `task wait expired`; the last answer requeues the parent. A wait bounded by `maxChildWaitMs` then
 * cancels the unsettled children (`cancelled_by_parent`, "parent wait expired"; harness-spec
 * §1.13). A wait that only the parent's budget bounded leaves them to the parent's settlement
 * (`timeout_exceeded` at its next claim), whose orphan cascade applies `onParentTerminal`, so
 * `leave_running` children keep running. A child's outcome racing this one: the store keeps
 * whichever lands first.
 */
export async function expireWait(ctx: AttemptContext, parent: Submission): Promise<void> {
  // Its approvals and callbacks end with it (ADR 0025): answers that came are delivered, the
  // others are answered as expired; then its children.
  await deliverStoredAnswers(ctx, parent);
  await expireCallWaits(ctx, parent, ctx.clock.now(), true);
  const children = await pendingChildren(ctx, parent);
  for (const { callId, child } of children) {
    const settled = child && (await settledOutcomeOf(ctx, child));
    const woke =
      child && settled
        ? await wakeParent(ctx, child, settled)
        : await deliver(ctx, parent, { callId, toolName: TASK, content: [{ type: "text", text: TASK_WAIT_EXPIRED }], isError: true });
    if (woke === "not_waiting" || woke === "no_parent") break; // resumed or settled meanwhile
  }
  if (!endedByMaxWait(ctx, parent)) return; // the parent's budget ended it: its settlement decides
  for (const { child } of children) {
    if (child && child.status !== "settled" && child.status !== "terminalizing") await cancelChild(ctx, child, "parent wait expired");
  }
}

/**
 * Whether `maxChildWaitMs` (not the parent's budget) is what ended this wait: the park set
 * `waitUntil` to the earlier of the park (a waiting row's `updatedAt`) + `maxChildWaitMs` and the
 * budget's end, so the wait was the `maxChildWaitMs` one only when its deadline is that far from
 * the park.
 */
function endedByMaxWait(ctx: AttemptContext, parent: Submission): boolean {
  const maxWaitMs = ctx.subagents?.limits.maxChildWaitMs ?? 0;
  return maxWaitMs > 0 && parent.waitUntil !== undefined && parent.waitUntil >= parent.updatedAt + maxWaitMs;
}
