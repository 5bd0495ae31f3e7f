/**
 * Delayed messages on DynamoDB (ADR 0025). A delayed admission reserves the session's next admission
 * sequence like any other (ADR 0035) (its member item, so the listing shows it from then on), marked
 * `delayed`: the head search skips it, and when the head pointer stood right at it (nothing
 * unsettled ahead) the pointer moves past it. Its state item is `waiting` in the waiting bucket,
 * keyed by its time, so the sweep's due-wait query finds it then. Joining the order is one
 * transaction: the next sequence and a new member, the old member marked `moved` (the listing
 * skips it), the state queued (runnable when it is the head), after reserving that new number.
 * A cancel before then settles it at once, its member marked settled.
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { ClaimLost, SubmissionNotFound } from "../errors.ts";
import type { AdmittedSubmission, Cancellation, NewSubmission, Submission, WaitEntry } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { failedCondition } from "./errors.ts";
import { Expr } from "./expression.ts";
import { BOOL, type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { memberSk, sessionPk } from "./keys.ts";
import { loadState, loadSubmission, toSubmission } from "./loader.ts";
import { RetryStep } from "./retry.ts";
import { replayedOrOwn, sessionKeyOf } from "./session-head.ts";
import { claimHeadItem, getSessionItem, memberItem, reserveSeq, resolveGapHead, sessionItemKey } from "./session-order.ts";
import { activityOf, newStateItem, stateKey, statusPk, submissionFromItems } from "./submission-item.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";
import { waitSortKey } from "./table.ts";
import { clearIdle, stampIdle } from "./idle-sessions.ts";

/** Admits a delayed message (`candidate.delayedUntil` set); the contract and races as `admitOnce`. */
export async function admitDelayedOnce(ctx: StoreContext, candidate: NewSubmission, inputItem: Item, ord: string): Promise<AdmittedSubmission> {
  const until = candidate.delayedUntil!;
  const key = candidate.sessionKey;
  const reserved = await reserveSeq(ctx, key, { id: candidate.conversationId, createdAt: candidate.createdAt });
  const seq = reserved.seq;
  const sub = { ...candidate, conversationId: reserved.conversationId };
  const waitingFor: WaitEntry[] = [{ kind: "time", until }];
  const state: Item = {
    ...newStateItem(sub, { seq, ord, isHead: false, now: ctx.clock.now() }),
    status: S("waiting"),
    byStatusPk: statusPk("waiting", sub.id),
    byStatusSk: S(waitSortKey(until, sub.id)),
    delayedUntil: N(until),
    waitingFor: S(JSON.stringify(waitingFor)),
  };
  const items: TransactWriteItem[] = [
    putNewItem(ctx, memberItem(key, seq, sub.id, { delayed: BOOL(true) })),
    putNewItem(ctx, inputItem),
    putNewItem(ctx, state),
  ];
  // Unsettled from now: no longer listed idle (conversation retention; its cancel lists it again).
  const e = clearIdle(new Expr());
  if (reserved.headSeq === seq) {
    // Never the head: a pointer standing at this number (nothing unsettled ahead) moves past it.
    e.set("headSeq", N(seq + 1));
    items.push(updateItem(ctx, sessionItemKey(key), e, `${e.n("headSeq")} = ${e.v(N(seq))} AND attribute_not_exists(${e.n("headId")})`));
  } else if (ctx.idleSessions) {
    items.push(updateItem(ctx, sessionItemKey(key), e, "attribute_exists(pk)"));
  }
  const reasons = await transact(ctx, items);
  if (!reasons) return { submission: submissionFromItems(state, JSON.parse(JSON.stringify(sub.input))), replayed: false };
  if (failedCondition(reasons, 1) || failedCondition(reasons, 2)) {
    const existing = await loadSubmission(ctx, sub.id);
    if (existing) return replayedOrOwn(ctx, existing, sub);
  }
  throw new RetryStep(`delayed admission ${seq} of ${sessionPk(key)} lost its number (${reasons.map((r) => r.Code).join(",")})`);
}

/** `joinSessionOrder`, one try: `RetryStep` when the session or the row moved since the read. */
export async function joinOnce(ctx: StoreContext, id: string): Promise<Submission> {
  const state = await loadState(ctx, id);
  if (!state) throw new SubmissionNotFound(id);
  if (str(state, "status") !== "waiting" || num(state, "delayedUntil") === undefined) {
    throw new ClaimLost(`submission ${id} is not a delayed message waiting for its time`);
  }
  const key = sessionKeyOf(state);
  const reserved = await reserveSeq(ctx, key, { id: reqStr(state, "conversationId"), createdAt: reqNum(state, "createdAt") });
  const seq = reserved.seq;
  const isHead = reserved.headSeq === seq;
  const oldSeq = reqNum(state, "seq");
  const ord = ctx.nextOrd();

  const x = new Expr()
    .set("status", S("queued"))
    .set("seq", N(seq))
    .set("ord", S(ord))
    .setItem(activityOf(id, ctx.clock.now()))
    .set("byStatusPk", statusPk(isHead ? "runnable" : "queued", id))
    .set("byStatusSk", S(ord))
    .remove("delayedUntil", "waitingFor", "waitUntil");
  if (isHead) x.set("isHead", BOOL(true));
  const stateCondition = `${x.n("status")} = ${x.v(S("waiting"))} AND attribute_exists(${x.n("delayedUntil")}) AND ${x.n("seq")} = ${x.v(N(oldSeq))}`;
  const items: TransactWriteItem[] = [
    putNewItem(ctx, memberItem(key, seq, id)),
    updateItem(ctx, { pk: S(sessionPk(key)), sk: S(memberSk(oldSeq)) }, new Expr().set("moved", BOOL(true)), "attribute_exists(pk)"),
    updateItem(ctx, stateKey(id), x, stateCondition),
  ];
  if (isHead) items.push(claimHeadItem(ctx, key, seq, id));
  const reasons = await transact(ctx, items);
  if (reasons) {
    if (failedCondition(reasons, 2)) {
      const current = reasons[2]?.Item as Item | undefined;
      if (current && str(current, "status") !== "waiting") throw new ClaimLost(`submission ${id} is ${str(current, "status")}, no longer a delayed message`);
    }
    throw new RetryStep(`joining ${id} raced (${reasons.map((r) => r.Code).join(",")})`);
  }
  if (!isHead) await resolveGapHead(ctx, key, await getSessionItem(ctx, key));
  const loaded = await loadSubmission(ctx, id);
  if (!loaded) throw new SubmissionNotFound(id);
  return toSubmission(ctx, loaded);
}

/**
 * Settles a delayed message a cancel found still outside the order (`e`: the cancel's update so
 * far, `kept`: the outcome's attributes): settled at once, its member marked settled. When its
 * session has no head, the same transaction lists the session idle again (conversation
 * retention): its admission took it off the list, and nothing else will put it back.
 */
export async function settleDelayed(ctx: StoreContext, state: Item, e: Expr, cancellation: Cancellation, kept: Item): Promise<void> {
  const id = reqStr(state, "id");
  const key = sessionKeyOf(state);
  e.set("cancelCode", S(cancellation.errorCode))
    .set("cancelError", S(cancellation.error))
    .set("status", S("settled"))
    .setItem(activityOf(id, ctx.clock.now()))
    .set("byStatusPk", statusPk("settled", id))
    .set("byStatusSk", S(reqStr(state, "ord")))
    .remove("delayedUntil", "waitingFor", "waitUntil");
  for (const [name, value] of Object.entries(kept)) e.set(name, value);
  const condition = `${e.n("status")} = ${e.v(S("waiting"))} AND attribute_exists(${e.n("delayedUntil")})`;
  const member = { pk: S(sessionPk(key)), sk: S(memberSk(reqNum(state, "seq"))) };
  const items: TransactWriteItem[] = [
    updateItem(ctx, stateKey(id), e, condition),
    updateItem(ctx, member, new Expr().set("settled", BOOL(true)), "attribute_exists(pk)"),
  ];
  // A session with a head is busy; its last settlement stamps it. Without one (its pointer idle,
  // or waiting at a reserved number, which the listing and a deletion look past), it is idle
  // now. A subagent's session is not stamped: it goes with its parent's.
  if (ctx.idleSessions && str(state, "parentSubmissionId") === undefined && str(await getSessionItem(ctx, key), "headId") === undefined) {
    const s = stampIdle(new Expr(), ctx.clock.now(), sessionPk(key));
    items.push(updateItem(ctx, sessionItemKey(key), s, `attribute_exists(pk) AND attribute_not_exists(${s.n("headId")})`));
  }
  const reasons = await transact(ctx, items);
  if (reasons) throw new RetryStep(`cancelling ${id} raced (${reasons.map((r) => r.Code).join(",")})`);
}
