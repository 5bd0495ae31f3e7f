/**
 * The wake on DynamoDB: a child's outcome delivered to its waiting parent (`deliverChildOutcome`).
 * The parent's state item holds the calls it still waits for as a string set (`pendingCalls`,
 * its pending-children count is the set's size). One transaction puts the batch of records in
 * the parent's log and rewrites the set without the call, conditioned on the parent still
 * waiting, on the call still being in the set and on the set's size as read: so a second
 * delivery of a call is refused by DynamoDB itself, and of two racing deliveries one re-reads.
 * The delivery that empties the set also requeues the parent (as `resumeSubmission`: status
 * queued, runnable, and its session item no longer marked waiting) in the same transaction.
 * Nothing here reads the `byParent` index: an eventually consistent listing never decides.
 */
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { ConversationRecord } from "../protocol/records.ts";
import { SubmissionNotFound } from "../errors.ts";
import type { StoreContext } from "./context.ts";
import { type ConversationLog, StateRefused } from "./conversation-log.ts";
import { Expr } from "./expression.ts";
import { type Item, N, reqStr, S, str } from "./item.ts";
import { loadState } from "./loader.ts";
import { RetryStep, rerunOnRace } from "./retry.ts";
import { sessionKeyOf } from "./session-head.ts";
import { sessionItemKey } from "./session-order.ts";
import { activityOf, statusPk } from "./submission-item.ts";
import { updateItem } from "./transact.ts";

/** The attribute of a waiting state item listing the calls still pending (a string set). */
export const PENDING_CALLS = "pendingCalls";

/** The pending calls on a state item (empty when absent). */
export function pendingCallsOf(state: Item | undefined): string[] {
  return state?.[PENDING_CALLS]?.SS ?? [];
}

/** The update of `waitSubmission` that stores the pending calls (a set cannot be empty: none is absent). */
export function setPendingCalls(e: Expr, calls: readonly string[] | undefined): void {
  const unique = [...new Set(calls ?? [])];
  if (unique.length > 0) e.set(PENDING_CALLS, { SS: unique });
  else e.remove(PENDING_CALLS);
}

/**
 * The update that requeues a waiting row whose last pending call was answered: queued and
 * runnable (only heads wait), its wait cleared (the check lives in the sort key, rewritten here).
 */
export function requeueUpdate(ctx: StoreContext, e: Expr, id: string): void {
  e.set("status", S("queued"))
    .setItem(activityOf(id, ctx.clock.now()))
    .set("byStatusPk", statusPk("runnable", id))
    .remove("waitUntil", PENDING_CALLS, "waitingFor");
  e.setRaw(`${e.n("byStatusSk")} = ${e.n("ord")}`);
}

export async function deliverChildOutcome(
  ctx: StoreContext,
  log: ConversationLog,
  delivery: ChildOutcomeDelivery,
): Promise<ChildOutcomeDelivered> {
  const id = delivery.parentSubmissionId;
  return rerunOnRace("deliverChildOutcome", async () => {
    const state = await loadState(ctx, id);
    if (!state) throw new SubmissionNotFound(id);
    if (str(state, "status") !== "waiting") return { delivered: false, reason: "not_waiting" };
    const pending = pendingCallsOf(state);
    if (!pending.includes(delivery.callId)) return { delivered: false, reason: "not_pending" };
    const rest = pending.filter((c) => c !== delivery.callId);
    const requeued = rest.length === 0;

    const e = new Expr();
    const condition = [
      `${e.n("status")} = ${e.v(S("waiting"))}`,
      `contains(${e.n(PENDING_CALLS)}, ${e.v(S(delivery.callId))})`,
      `size(${e.n(PENDING_CALLS)}) = ${e.v(N(pending.length))}`,
    ].join(" AND ");
    if (requeued) {
      requeueUpdate(ctx, e, id);
    } else {
      e.set(PENDING_CALLS, { SS: rest });
    }
    let records: ConversationRecord[];
    try {
      records = await log.append({
        conversationId: reqStr(state, "conversationId"),
        drafts: delivery.drafts,
        stateWrite: { submissionId: id, update: e, condition },
        // The last delivery also tells the session item its head no longer waits (`sessionLive`).
        extraItems: requeued ? () => [updateItem(ctx, sessionItemKey(sessionKeyOf(state)), new Expr().remove("headWaiting"))] : undefined,
      });
    } catch (error) {
      // Another delivery (or a cancel) moved the parent since the read: decide again.
      if (error instanceof StateRefused) throw new RetryStep(error.message);
      throw error;
    }
    return { delivered: true, records, requeued };
  });
}
