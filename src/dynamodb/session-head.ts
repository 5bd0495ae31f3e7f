/**
 * The session item and the session head. Per session key one item (`SES#…` / `SESSION`) holds
 * the admission sequence (`admitSeq`), the head pointer (`headSeq`, `headId`: the oldest
 * unsettled submission; `headSeq = admitSeq + 1` when none) and the conversation. Member items
 * (`Q#<seq>`) map each admission sequence number to its submission. The head's state item
 * carries `isHead`, written in the same transactions that move the pointer, so a claim checks
 * the head with one conditional update of the submission's own state item.
 */
import { GetItemCommand, type TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { DispatchConflict, SessionBusy } from "../errors.ts";
import { type NewSubmission, type SessionKey, type Submission, sessionKeyString } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { queryItems } from "./query.ts";
import { failedCondition } from "./errors.ts";
import { Expr } from "./expression.ts";
import { BOOL, bool, type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { memberSk, SESSION_SK, sessionPk } from "./keys.ts";
import { type LoadedSubmission, loadSubmission, toSubmission } from "./loader.ts";
import { RetryStep } from "./retry.ts";
import {
  inputDigest,
  newStateItem,
  stateKey,
  statusPk,
  submissionFromItems,
} from "./submission-item.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";

/** The session item of `key` (strongly consistent), or undefined. */
export async function getSessionItem(ctx: StoreContext, key: SessionKey): Promise<Item | undefined> {
  const res = await ctx.dynamo.send(
    new GetItemCommand({ TableName: ctx.table, Key: sessionItemKey(key), ConsistentRead: true }),
  );
  return res.Item;
}

export function sessionItemKey(key: SessionKey): Item {
  return { pk: S(sessionPk(key)), sk: S(SESSION_SK) };
}

/** The session key a state item belongs to. */
export function sessionKeyOf(state: Item): SessionKey {
  return { agent: reqStr(state, "agent"), instance: reqStr(state, "instance"), session: reqStr(state, "session") };
}

/**
 * Admits `sub` as its session's next submission: one transaction bumps the session's admission
 * sequence (conditioned on the sequence and head read just before), puts the member, input and
 * state items (each only if absent). Same id again → the stored row when the input's canonical
 * JSON matches, else `DispatchConflict`. Throws `RetryStep` when a concurrent admission raced.
 */
export async function admitOnce(ctx: StoreContext, candidate: NewSubmission, inputItem: Item, ord: string): Promise<Submission> {
  const session = await getSessionItem(ctx, candidate.sessionKey);
  // A session being deleted (ADR 0034) takes nothing until its deletion completes.
  if (str(session, "deleting") !== undefined) throw new SessionBusy(sessionKeyString(candidate.sessionKey));
  const prev = num(session, "admitSeq") ?? 0;
  const headSeq = num(session, "headSeq") ?? 1;
  const seq = prev + 1;
  const isHead = headSeq === seq;
  // The session's conversation: the one it has, or the candidate's, created in this transaction.
  const conversationId = str(session, "convId");
  const sub = conversationId === undefined ? candidate : { ...candidate, conversationId };

  const e = new Expr()
    .set("admitSeq", N(seq))
    .set("headSeq", N(headSeq))
    .set("agent", S(sub.sessionKey.agent))
    .set("instance", S(sub.sessionKey.instance))
    .set("session", S(sub.sessionKey.session));
  if (isHead) e.set("headId", S(sub.id));
  if (conversationId === undefined) e.set("convId", S(sub.conversationId)).set("convCreatedAt", N(sub.createdAt));
  let condition =
    prev === 0
      ? `attribute_not_exists(${e.n("admitSeq")})`
      : `${e.n("admitSeq")} = ${e.v(N(prev))} AND ${e.n("headSeq")} = ${e.v(N(headSeq))}`;
  if (conversationId === undefined) condition += ` AND attribute_not_exists(${e.n("convId")})`;
  condition += ` AND attribute_not_exists(${e.n("deleting")})`;
  const state = newStateItem(sub, { seq, ord, isHead, now: ctx.clock.now() });
  const pk = sessionPk(sub.sessionKey);
  const reasons = await transact(ctx, [
    updateItem(ctx, sessionItemKey(sub.sessionKey), e, condition),
    putNewItem(ctx, { pk: S(pk), sk: S(memberSk(seq)), seq: N(seq), submissionId: S(sub.id) }),
    putNewItem(ctx, inputItem),
    putNewItem(ctx, state),
  ]);
  if (!reasons) return submissionFromItems(state, JSON.parse(JSON.stringify(sub.input)));
  if (failedCondition(reasons, 2) || failedCondition(reasons, 3)) {
    // Admitted meanwhile, by another caller or by this call's own earlier try.
    const existing = await loadSubmission(ctx, sub.id);
    if (existing) return replay(ctx, existing, sub);
  }
  throw new RetryStep(`session ${pk} admitted concurrently`);
}

/** The stored row for a re-admission to the same session with the same input, else `DispatchConflict`. */
export async function replay(ctx: StoreContext, existing: LoadedSubmission, sub: NewSubmission): Promise<Submission> {
  const target = sessionKeyOf(existing.state);
  const sameTarget =
    target.agent === sub.sessionKey.agent && target.instance === sub.sessionKey.instance && target.session === sub.sessionKey.session;
  if (!sameTarget || str(existing.input, "inputDigest") !== inputDigest(sub.input)) throw new DispatchConflict();
  return toSubmission(ctx, existing);
}

/**
 * Settles the submission whose freshly read state is `state` (status queued, waiting or
 * terminalizing), conditioned on that status. When it is its session's head, the same
 * transaction moves the head pointer to the next unsettled submission and marks that one
 * runnable; a queued submission behind the head is settled together with its member item, so
 * the next head search skips it. Throws `RetryStep` when anything moved since the read.
 */
export async function settleOnce(ctx: StoreContext, state: Item, lastError?: string, outcome?: Item): Promise<void> {
  const id = reqStr(state, "id");
  const seq = reqNum(state, "seq");
  const key = sessionKeyOf(state);
  const e = new Expr()
    .set("status", S("settled"))
    .set("updatedAt", N(ctx.clock.now()))
    .set("byStatusPk", statusPk("settled", id))
    .set("byStatusSk", S(reqStr(state, "ord")))
    .remove("isHead");
  if (lastError !== undefined) e.set("lastError", S(lastError));
  for (const [name, value] of Object.entries(outcome ?? {})) e.set(name, value);
  let condition = `${e.n("status")} = ${e.v(S(reqStr(state, "status")))}`;
  const items: TransactWriteItem[] = [];

  if (!bool(state, "isHead")) {
    condition += ` AND attribute_not_exists(${e.n("isHead")})`;
    const member = new Expr().set("settled", BOOL(true));
    items.push(updateItem(ctx, stateKey(id), e, condition));
    items.push(updateItem(ctx, { pk: S(sessionPk(key)), sk: S(memberSk(seq)) }, member, "attribute_exists(pk)"));
  } else {
    const session = await getSessionItem(ctx, key);
    if (num(session, "headSeq") !== seq) throw new RetryStep(`head of ${sessionPk(key)} moved`);
    const admitted = reqNum(session!, "admitSeq");
    const next = await nextUnsettled(ctx, key, seq, admitted);
    items.push(updateItem(ctx, stateKey(id), e, condition));

    const s = new Expr().set("headSeq", N(next ? next.seq : admitted + 1));
    if (next) s.set("headId", S(next.id));
    else s.remove("headId");
    // With no successor the new pointer is "one past the last admission": an admission racing
    // this settlement would land exactly there without knowing it is the head, so refuse it.
    let sessionCondition = `${s.n("headSeq")} = ${s.v(N(seq))}`;
    if (!next) sessionCondition += ` AND ${s.n("admitSeq")} = ${s.v(N(admitted))}`;
    items.push(updateItem(ctx, sessionItemKey(key), s, sessionCondition));

    if (next) {
      // Promotion is a transition: the sweeper measures a queued head's staleness from it. A
      // submission cancelled behind the head is promoted as it is (terminalizing, its bucket kept).
      const x = new Expr().set("isHead", BOOL(true)).set("updatedAt", N(ctx.clock.now()));
      if (!next.cancelled) x.set("byStatusPk", statusPk("runnable", next.id));
      const nextCondition = `${x.n("status")} = ${x.v(S(next.cancelled ? "terminalizing" : "queued"))} AND attribute_not_exists(${x.n("isHead")})`;
      items.push(updateItem(ctx, stateKey(next.id), x, nextCondition));
    }
  }
  const reasons = await transact(ctx, items);
  if (reasons) throw new RetryStep(`settling ${id} raced (${reasons.map((r) => r.Code).join(",")})`);
}

/**
 * A queued submission behind its session's head → the update `e` (to terminalizing, under
 * `condition`), its member marked `cancelled` in the same transaction, so the head search knows
 * how to promote it. Throws `RetryStep` when anything moved since the read (it became the head).
 */
export async function cancelBehindHead(ctx: StoreContext, state: Item, e: Expr, condition: string): Promise<void> {
  const member = new Expr().set("cancelled", BOOL(true));
  const reasons = await transact(ctx, [
    updateItem(ctx, stateKey(reqStr(state, "id")), e, `${condition} AND attribute_not_exists(${e.n("isHead")})`),
    updateItem(ctx, { pk: S(sessionPk(sessionKeyOf(state))), sk: S(memberSk(reqNum(state, "seq"))) }, member, "attribute_exists(pk)"),
  ]);
  if (reasons) throw new RetryStep(`cancelling ${reqStr(state, "id")} raced (${reasons.map((r) => r.Code).join(",")})`);
}

/**
 * The first member after `seq` (up to `admitted`) not settled behind the head, or undefined. A
 * delayed message's member (outside the order until it joins it, then `moved`) is skipped.
 */
async function nextUnsettled(
  ctx: StoreContext,
  key: SessionKey,
  seq: number,
  admitted: number,
): Promise<{ seq: number; id: string; cancelled: boolean } | undefined> {
  if (seq + 1 > admitted) return undefined;
  const members = queryItems(ctx, {
    KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
    ExpressionAttributeValues: {
      ":pk": S(sessionPk(key)),
      ":lo": S(memberSk(seq + 1)),
      ":hi": S(memberSk(admitted)),
    },
    ConsistentRead: true,
  });
  for await (const member of members) {
    if (!bool(member, "settled") && !bool(member, "delayed")) {
      return { seq: reqNum(member, "seq"), id: reqStr(member, "submissionId"), cancelled: bool(member, "cancelled") };
    }
  }
  return undefined;
}
