/**
 * The session item and the session head. Per session key one item (`SES#…` / `SESSION`) holds
 * the admission sequence (`admitSeq`, reserved atomically: `session-order.ts`), the head pointer
 * (`headSeq`, `headId`: the oldest unsettled submission; `headSeq = admitSeq + 1` when none, and
 * no `headId` while it waits at a reserved number not yet written) and the conversation. Member
 * items (`Q#<seq>`) map each admission sequence number to its submission (or mark it `skipped`).
 * The head's state item carries `isHead`, written in the same transactions that move the pointer,
 * so a claim checks the head with one conditional update of the submission's own state item.
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { DispatchConflict } from "../errors.ts";
import type { AdmittedSubmission, NewSubmission, SessionKey, Submission } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { failedCondition } from "./errors.ts";
import { Expr } from "./expression.ts";
import { BOOL, bool, type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { memberSk, sessionPk } from "./keys.ts";
import { type LoadedSubmission, loadSubmission, toSubmission } from "./loader.ts";
import { RetryStep } from "./retry.ts";
import { claimHeadItem, getSessionItem, memberItem, moveHeadItems, reserveSeq, resolveBehindGap, resolveGapHead } from "./session-order.ts";
import { activityOf, inputDigest, newStateItem, stateKey, statusPk, submissionFromItems } from "./submission-item.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";

/** The session key a state item belongs to. */
export function sessionKeyOf(state: Item): SessionKey {
  return { agent: reqStr(state, "agent"), instance: reqStr(state, "instance"), session: reqStr(state, "session") };
}

/**
 * Admits `candidate` as its session's next submission: reserves its number (`reserveSeq`), then
 * one transaction puts the member, input and state items (each only if absent) and, when the
 * pointer stood at that number, makes it the head. Same id again → the stored row when the
 * input's canonical JSON matches, else `DispatchConflict`. Throws `RetryStep` when its number
 * was skipped meanwhile (an admission behind it found the pointer waiting there): reserving
 * again is the answer.
 */
export async function admitOnce(ctx: StoreContext, candidate: NewSubmission, inputItem: Item, ord: string): Promise<AdmittedSubmission> {
  const key = candidate.sessionKey;
  const reserved = await reserveSeq(ctx, key, { id: candidate.conversationId, createdAt: candidate.createdAt });
  const sub = { ...candidate, conversationId: reserved.conversationId };
  const isHead = reserved.headSeq === reserved.seq;
  const state = newStateItem(sub, { seq: reserved.seq, ord, isHead, now: ctx.clock.now() });
  const items = [putNewItem(ctx, memberItem(key, reserved.seq, sub.id)), putNewItem(ctx, inputItem), putNewItem(ctx, state)];
  if (isHead) items.push(claimHeadItem(ctx, key, reserved.seq, sub.id));
  const reasons = await transact(ctx, items);
  if (reasons) {
    if (failedCondition(reasons, 1) || failedCondition(reasons, 2)) {
      // Admitted meanwhile, by another caller or by this call's own earlier try.
      const existing = await loadSubmission(ctx, sub.id);
      if (existing) {
        const admitted = await replayedOrOwn(ctx, existing, sub);
        // Its own earlier try (a lost answer) skipped the look below; so may have a replay's.
        await resolveBehindGap(ctx, existing.state);
        return admitted;
      }
    }
    throw new RetryStep(`admission ${reserved.seq} of ${sessionPk(key)} lost its number (${reasons.map((r) => r.Code).join(",")})`);
  }
  // Behind the pointer: when it waits at a gap (an admission before this one not written yet, or
  // never to be), move it on, so no head waits on an admitter that is gone.
  if (!isHead) await resolveGapHead(ctx, key, await getSessionItem(ctx, key));
  return { submission: submissionFromItems(state, JSON.parse(JSON.stringify(sub.input))), replayed: false };
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
 * The stored row an admission's transaction found already written: this admission's own when
 * its time is this admission's (an earlier try of the same call whose answer was lost: the SDK
 * retries a transaction), else an earlier admission's (a replay). Two admissions of one dispatch
 * id racing in the same millisecond both read as new here, the one case a time cannot tell apart.
 */
export async function replayedOrOwn(ctx: StoreContext, existing: LoadedSubmission, sub: NewSubmission): Promise<AdmittedSubmission> {
  const submission = await replay(ctx, existing, sub);
  return { submission, replayed: submission.createdAt !== sub.createdAt };
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
    .setItem(activityOf(id, ctx.clock.now()))
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
    items.push(updateItem(ctx, stateKey(id), e, condition));
    const pointer = (s: Expr) => `${s.n("headSeq")} = ${s.v(N(seq))}`;
    // A subagent's session is never listed idle: it goes with its parent's (conversation retention).
    const moves = await moveHeadItems(ctx, key, seq + 1, reqNum(session!, "admitSeq"), pointer, { stampIdle: str(state, "parentSubmissionId") === undefined });
    items.push(...moves);
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
