/**
 * Answering call waits on DynamoDB (ADR 0025; the items: `call-wait-items.ts`, registered in the
 * transaction of the append whose record announces them, as updates that keep what is there
 * (`if_not_exists`), so a record of the same call again changes nothing and never fails it).
 *
 * `answerCall` sets `answer` under `attribute_not_exists(answer)`: a second answer is refused by
 * DynamoDB itself. To a waiting submission with the call pending, the same transaction appends
 * the answer's records and rewrites the pending set (the wake of `child-outcome.ts`, with the same
 * conditions); otherwise it commits with a check that the submission is not settling or settled.
 */
import type { CallAnswered, CallAnswerWrite } from "../store/call-wait.ts";
import { callWaitKey, getCallWait } from "./call-wait-items.ts";
import { pendingCallsOf, requeueUpdate } from "./child-outcome.ts";
import type { StoreContext } from "./context.ts";
import { type ConversationLog, ExtrasRaced, StateRefused } from "./conversation-log.ts";
import { failedCondition, isTransientCancellation } from "./errors.ts";
import { Expr } from "./expression.ts";
import { N, reqStr, S, str } from "./item.ts";
import { loadState } from "./loader.ts";
import { RetryStep, rerunOnRace } from "./retry.ts";
import { sessionKeyOf } from "./session-head.ts";
import { sessionItemKey } from "./session-order.ts";
import { stateKey } from "./submission-item.ts";
import { transact, updateItem } from "./transact.ts";

export async function answerCall(ctx: StoreContext, log: ConversationLog, write: CallAnswerWrite): Promise<CallAnswered> {
  const id = write.submissionId;
  return rerunOnRace("answerCall", async (): Promise<CallAnswered> => {
    const [wait, state] = await Promise.all([getCallWait(ctx, id, write.callId), loadState(ctx, id)]);
    if (wait === undefined || state === undefined) return { answered: false, reason: "not_found" };
    if (wait.answer !== undefined) return { answered: false, reason: "already_answered", answer: wait.answer };
    const status = str(state, "status");
    if (status === "terminalizing" || status === "settled") return { answered: false, reason: "settled" };

    const a = new Expr().set("answer", S(JSON.stringify(write.answer)));
    const answered = `attribute_exists(${a.n("body")}) AND attribute_not_exists(${a.n("answer")})`;
    const answerItem = updateItem(ctx, callWaitKey(id, write.callId), a, answered);
    const pending = pendingCallsOf(state);
    if (status !== "waiting" || !pending.includes(write.callId)) {
      // Not waiting on it yet: the answer alone, while the submission is not settling or settled.
      const check = new Expr();
      const live = `${check.n("status")} IN (${check.v(S("queued"))}, ${check.v(S("running"))}, ${check.v(S("waiting"))})`;
      const reasons = await transact(ctx, [answerItem, { ConditionCheck: { TableName: ctx.table, Key: stateKey(id), ConditionExpression: live, ...check.attributes } }]);
      if (!reasons) return { answered: true, delivered: false };
      if (failedCondition(reasons, 0) || failedCondition(reasons, 1) || isTransientCancellation(reasons)) throw new RetryStep("answer raced");
      throw new Error(`answer of ${id}/${write.callId} refused (${reasons.map((r) => r.Code).join(",")})`);
    }

    const rest = pending.filter((c) => c !== write.callId);
    const requeued = rest.length === 0;
    const e = new Expr();
    const condition = [
      `${e.n("status")} = ${e.v(S("waiting"))}`,
      `contains(${e.n("pendingCalls")}, ${e.v(S(write.callId))})`,
      `size(${e.n("pendingCalls")}) = ${e.v(N(pending.length))}`,
    ].join(" AND ");
    if (requeued) requeueUpdate(ctx, e, id);
    else e.set("pendingCalls", { SS: rest });
    try {
      const records = await log.append({
        conversationId: reqStr(state, "conversationId"),
        drafts: write.drafts,
        stateWrite: { submissionId: id, update: e, condition },
        extraItems: () => [
          answerItem,
          // The answer that empties the set tells the session item its head no longer waits.
          ...(requeued ? [updateItem(ctx, sessionItemKey(sessionKeyOf(state)), new Expr().remove("headWaiting"))] : []),
        ],
      });
      return { answered: true, delivered: true, records, requeued };
    } catch (error) {
      // Another answer or delivery (or a cancel) moved it since the read: decide again.
      if (error instanceof StateRefused || error instanceof ExtrasRaced) throw new RetryStep(error.message);
      throw error;
    }
  });
}
