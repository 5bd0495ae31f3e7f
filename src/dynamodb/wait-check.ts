/**
 * Postponing a wait check on DynamoDB (`SubmissionStore.postponeWaitCheck`, ADR 0021). A waiting
 * row's next check lives in its `byStatus` sort key (`waitSortKey`), so moving the check is one
 * conditional update of that key on the state item: applied only while the row is waiting with
 * the key the caller found due, and only up to its deadline. No read first: a refusal for the
 * deadline alone comes back with the item (`ALL_OLD`) and is retried at the deadline.
 */
import type { WaitCheckPostponement } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { Expr } from "./expression.ts";
import { N, num, S, str } from "./item.ts";
import { updateState } from "./state-update.ts";
import { waitSortKey } from "./table.ts";

export async function postponeWaitCheck(ctx: StoreContext, postponement: WaitCheckPostponement): Promise<boolean> {
  const { submissionId: id } = postponement;
  const due = waitSortKey(postponement.waitCheckAt, id);
  let next = postponement.nextCheckAt;
  for (;;) {
    const e = new Expr().set("byStatusSk", S(waitSortKey(next, id)));
    const until = e.n("waitUntil");
    const condition = [
      `${e.n("status")} = ${e.v(S("waiting"))}`,
      `${e.n("byStatusSk")} = ${e.v(S(due))}`,
      `(attribute_not_exists(${until}) OR ${until} >= ${e.v(N(next))})`,
    ].join(" AND ");
    const outcome = await updateState(ctx, id, e, condition);
    if (outcome.done) return true;
    const current = outcome.current;
    const deadline = current && num(current, "waitUntil");
    const stillDue = current !== undefined && str(current, "status") === "waiting" && str(current, "byStatusSk") === due;
    // Refused for the deadline alone: the check goes to the deadline (earlier, so this ends).
    if (!stillDue || deadline === undefined || deadline >= next) return false;
    next = deadline;
  }
}
