/**
 * A session's order on DynamoDB (ADR 0035). An admission first reserves its sequence number with
 * one atomic update of the session item (`admitSeq + 1`): concurrent admissions into one session
 * are serialized by DynamoDB itself instead of racing a conditional transaction, so none has to
 * start over because another won. Its member, input and state items are written next; between
 * the two a reserved number has no member yet (a gap), and an admitter that dies there leaves
 * one for good.
 *
 * So the head pointer may stand at a gap (`headSeq <= admitSeq` with no `headId`). Whoever finds
 * it there moves it on ({@link resolveGapHead}): every missing member before the first live one
 * is written as a `skipped` member in the same transaction that moves the pointer, conditioned
 * on being absent, so an admitter still on its way finds its number taken and reserves another.
 * A reserved number is thus either written by its admitter or skipped, never both, and no head
 * waits on an admitter that is gone.
 *
 * The look after an admitter's write is its own: an admitter that dies (or whose read fails)
 * after writing its member behind a pointer waiting at a gap leaves a queued submission that no
 * claim accepts. A replay of its dispatch id looks again, and so does the sweep: its runnable
 * listing reads the `queued` bucket's rows older than {@link STRANDED_GRACE_MS} and moves the
 * pointer of any of their sessions that has no head ({@link resolveStrandedHeads}).
 */
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  TransactionConflictException,
  type TransactWriteItem,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { SessionBusy } from "../errors.ts";
import { type SessionKey, sessionKeyString } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { Expr } from "./expression.ts";
import { BOOL, bool, type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { memberSk, SESSION_SK, sessionPk, submissionIdOf, submissionPk } from "./keys.ts";
import { queryItems } from "./query.ts";
import { jitter, RetryStep, rerunOnRace } from "./retry.ts";
import type { BucketPeeks } from "./listing.ts";
import { idFloor } from "../conversation/ids.ts";
import { DynamoStoreContended } from "./errors.ts";
import { activityOf, stateKey, statusPk } from "./submission-item.ts";
import { clearIdle, stampIdle, STRANDED_GRACE_MS } from "./idle-sessions.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";

/** Skipped members written per pointer move at most (a transaction holds 100 items). */
const MAX_SKIPS = 90;
/** Tries of a reservation that meets a transaction in flight on the session item. */
const RESERVE_ATTEMPTS = 20;

/** A reserved place in a session's order. */
export interface Reservation {
  seq: number;
  /** The head pointer when the number was reserved: equal to `seq` when nothing was ahead. */
  headSeq: number;
  /** The session's conversation (the candidate's when this reservation created the session). */
  conversationId: string;
  /** The session item as the reservation left it. */
  session: Item;
}

/** The session item's key. */
export function sessionItemKey(key: SessionKey): Item {
  return { pk: S(sessionPk(key)), sk: S(SESSION_SK) };
}

/**
 * Reserves the next admission sequence number of `key`'s session (creating the session with
 * `conversationId` when it has none). Refuses a session being deleted (`SessionBusy`).
 */
export async function reserveSeq(ctx: StoreContext, key: SessionKey, conversation: { id: string; createdAt: number }): Promise<Reservation> {
  const e = new Expr()
    .set("agent", S(key.agent))
    .set("instance", S(key.instance))
    .set("session", S(key.session))
    // When the newest number was reserved: the idle listing leaves a session alone while the
    // admitter of a number its pointer waits at may still be writing.
    .set("reservedAt", N(ctx.clock.now()));
  // The idle stamp (conversation retention) stays: the write that puts something unsettled in
  // the order clears it (the head's admission, a delayed message's). An admitter that dies here
  // leaves nothing unsettled, and the session listed idle as it was.
  const seq = e.n("admitSeq");
  const head = e.n("headSeq");
  const conv = e.n("convId");
  const convAt = e.n("convCreatedAt");
  e.setRaw(`${seq} = if_not_exists(${seq}, ${e.v(N(0))}) + ${e.v(N(1))}`)
    .setRaw(`${head} = if_not_exists(${head}, ${e.v(N(1))})`)
    .setRaw(`${conv} = if_not_exists(${conv}, ${e.v(S(conversation.id))})`)
    .setRaw(`${convAt} = if_not_exists(${convAt}, ${e.v(N(conversation.createdAt))})`);
  const request = new UpdateItemCommand({
    TableName: ctx.table,
    Key: sessionItemKey(key),
    UpdateExpression: e.update,
    // A session being deleted (ADR 0034) takes nothing until its deletion completes.
    ConditionExpression: `attribute_not_exists(${e.n("deleting")})`,
    ...e.attributes,
    ReturnValues: "ALL_NEW",
  });
  for (let attempt = 0; ; attempt++) {
    try {
      const session = (await ctx.dynamo.send(request)).Attributes!;
      return { seq: reqNum(session, "admitSeq"), headSeq: reqNum(session, "headSeq"), conversationId: reqStr(session, "convId"), session };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new SessionBusy(sessionKeyString(key));
      // A transaction on the session item (a head move) was in flight: nothing was written.
      if (!(error instanceof TransactionConflictException) || attempt + 1 >= RESERVE_ATTEMPTS) throw error;
      await new Promise((r) => setTimeout(r, 2 + jitter(5, Math.min(attempt, 6), 250)));
    }
  }
}

/**
 * The update that makes the reserving admission the head, for its write's transaction: valid
 * only while the pointer still stands at its number with nobody there.
 */
export function claimHeadItem(ctx: StoreContext, key: SessionKey, seq: number, id: string): TransactWriteItem {
  // In use: no longer listed idle (conversation retention).
  const e = clearIdle(new Expr().set("headId", S(id)));
  return updateItem(ctx, sessionItemKey(key), e, `${e.n("headSeq")} = ${e.v(N(seq))} AND attribute_not_exists(${e.n("headId")})`);
}

/** The member item of a reserved number. */
export function memberItem(key: SessionKey, seq: number, id: string, extra: Item = {}): Item {
  return { pk: S(sessionPk(key)), sk: S(memberSk(seq)), seq: N(seq), submissionId: S(id), ...extra };
}

/** A member that names a submission (not a skipped number). */
export function namesSubmission(member: Item): boolean {
  return str(member, "submissionId") !== undefined;
}

/** How a head move marks what it does. */
export interface MoveOptions {
  /** Stamp the session idle when nothing live is left (default true; false for a subagent's session). */
  stampIdle?: boolean;
  /** Set the promoted head's `updatedAt` (default true; false when the sweep promotes it and rings it at once). */
  touch?: boolean;
}

/**
 * The transaction items that move `key`'s head pointer from `fromSeq` (the settled head's number
 * plus one, or a gap) to the first live member up to `admitted`: that member marked head, the
 * numbers missing before it skipped. With none live the pointer goes one past `admitted`, on
 * the condition that no member was written there meanwhile (an admission that reserved it
 * before this move then finds the pointer at its number; one that wrote first makes this move
 * run again and see it). `pointerCondition` guards the session item: the caller's view of it.
 */
export async function moveHeadItems(
  ctx: StoreContext,
  key: SessionKey,
  fromSeq: number,
  admitted: number,
  pointerCondition: (e: Expr) => string,
  options: MoveOptions = {},
): Promise<TransactWriteItem[]> {
  const items: TransactWriteItem[] = [];
  const skip = (seq: number) => items.push(putNewItem(ctx, { pk: S(sessionPk(key)), sk: S(memberSk(seq)), seq: N(seq), skipped: BOOL(true) }));
  let next: { seq: number; id: string; cancelled: boolean } | undefined;
  // `expected`: the first number not yet passed. `full`: too many gaps for one transaction, so
  // the pointer stops at the first one not skipped and the next look at the session moves it on.
  let expected = fromSeq;
  let full = false;
  const skipUpTo = (limit: number) => {
    for (; expected < limit; expected++) {
      if (items.length === MAX_SKIPS) return void (full = true);
      skip(expected);
    }
  };
  if (fromSeq <= admitted) {
    const members = queryItems(ctx, {
      KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
      ExpressionAttributeValues: { ":pk": S(sessionPk(key)), ":lo": S(memberSk(fromSeq)), ":hi": S(memberSk(admitted)) },
      ConsistentRead: true,
    });
    for await (const member of members) {
      const seq = reqNum(member, "seq");
      skipUpTo(seq);
      if (full) break;
      expected = seq + 1;
      // A settled, skipped or delayed member (outside the order until it joins it) is passed.
      if (!namesSubmission(member) || bool(member, "settled") || bool(member, "delayed") || bool(member, "moved")) continue;
      next = { seq, id: reqStr(member, "submissionId"), cancelled: bool(member, "cancelled") };
      break;
    }
    if (!next && !full) skipUpTo(admitted + 1);
  }

  const s = new Expr();
  // A head: in use, not listed idle (a settlement that read the session before this head's
  // reservation may have stamped it, ADR 0035's race).
  if (next) clearIdle(s.set("headSeq", N(next.seq)).set("headId", S(next.id)));
  else {
    s.set("headSeq", N(expected)).remove("headId");
    // Nothing unsettled left: idle from now (conversation retention), unless a subagent's.
    if (!full && (options.stampIdle ?? true) && ctx.idleSessions) stampIdle(s, ctx.clock.now(), sessionPk(key));
  }
  items.push(updateItem(ctx, sessionItemKey(key), s, pointerCondition(s)));
  if (next) {
    // Promotion is a transition: the sweeper measures a queued head's staleness from it (unless
    // the sweep itself promotes, and rings it at once). A submission cancelled behind the head is
    // promoted as it is (terminalizing, its bucket kept).
    const x = new Expr().set("isHead", BOOL(true));
    if (options.touch ?? true) x.setItem(activityOf(next.id, ctx.clock.now()));
    if (!next.cancelled) x.set("byStatusPk", statusPk("runnable", next.id));
    const condition = `${x.n("status")} = ${x.v(S(next.cancelled ? "terminalizing" : "queued"))} AND attribute_not_exists(${x.n("isHead")})`;
    items.push(updateItem(ctx, stateKey(next.id), x, condition));
  } else if (!full) {
    items.push({
      ConditionCheck: {
        TableName: ctx.table,
        Key: { pk: S(sessionPk(key)), sk: S(memberSk(expected)) },
        ConditionExpression: "attribute_not_exists(pk)",
      },
    });
  }
  return items;
}

/**
 * Moves `key`'s head pointer off a gap (a reserved number whose admitter has not written it, or
 * never will), if it stands at one; a no-op when the session has a head or nothing unsettled.
 * Run by an admission that wrote its member behind the pointer, a replay of one, the sweep, and
 * a deletion. Answers the submission it made the head, if any.
 */
export async function resolveGapHead(
  ctx: StoreContext,
  key: SessionKey,
  session: Item | undefined,
  options: { touch?: boolean; attempts?: number } = {},
): Promise<string | undefined> {
  for (let i = 0; i < (options.attempts ?? 12); i++) {
    if (!session || str(session, "headId") !== undefined) return undefined;
    const headSeq = num(session, "headSeq") ?? 1;
    const admitted = num(session, "admitSeq") ?? 0;
    if (headSeq > admitted) return undefined;
    const items = await moveHeadItems(ctx, key, headSeq, admitted, (e) => `${e.n("headSeq")} = ${e.v(N(headSeq))} AND attribute_not_exists(${e.n("headId")})`, {
      touch: options.touch ?? true,
    });
    const reasons = await transact(ctx, items);
    if (!reasons) return promotedBy(items);
    // Someone moved it first, or an admitter wrote a member this move meant to skip: look again.
    session = await getSessionItem(ctx, key);
  }
  throw new RetryStep(`the head of ${sessionPk(key)} stays at a gap`);
}

/** The submission a head move's items promote (the state item they mark `isHead`), if any. */
function promotedBy(items: TransactWriteItem[]): string | undefined {
  const pk = items.map((i) => i.Update?.Key?.pk?.S).find((k) => k?.startsWith(submissionPk("")));
  return pk === undefined ? undefined : submissionIdOf(pk);
}

/**
 * After an admission's write found (or made) its row: a queued submission behind the pointer
 * whose session has no head makes the pointer move on, so a pointer left at a gap by an admitter
 * that died before its own look (ADR 0035) moves when the dispatch is retried.
 */
export async function resolveBehindGap(ctx: StoreContext, state: Item): Promise<void> {
  if (str(state, "status") !== "queued" || bool(state, "isHead")) return;
  const key = { agent: reqStr(state, "agent"), instance: reqStr(state, "instance"), session: reqStr(state, "session") };
  await rerunOnRace("admitSubmission", async () => {
    await resolveGapHead(ctx, key, await getSessionItem(ctx, key));
  });
}

/**
 * The sweep's look at stranded heads: sessions of queued rows behind their pointer, admitted or
 * joined over {@link STRANDED_GRACE_MS} ago, whose pointer has no head (it waits at a gap whose
 * admitter is gone, with written members behind it) get their pointer moved. Answers the ids it
 * made heads (the sweep rings them). A session still contended is left for the next sweep.
 */
export async function resolveStrandedHeads(ctx: StoreContext, peeks: BucketPeeks): Promise<string[]> {
  const stale = await peeks.peek("queued", idFloor(ctx.clock.now() - STRANDED_GRACE_MS));
  const sessions = new Map<string, SessionKey>();
  for (const state of stale) {
    if (str(state, "status") !== "queued" || bool(state, "isHead")) continue;
    const key = { agent: reqStr(state, "agent"), instance: reqStr(state, "instance"), session: reqStr(state, "session") };
    sessions.set(sessionPk(key), key);
  }
  const promoted: string[] = [];
  for (const key of sessions.values()) {
    const session = await getSessionItem(ctx, key);
    if (!session || str(session, "headId") !== undefined || str(session, "deleting") !== undefined) continue;
    try {
      const id = await rerunOnRace("listRunnable", () => resolveGapHead(ctx, key, session, { touch: false }), 3);
      if (id !== undefined) promoted.push(id);
    } catch (error) {
      if (!(error instanceof DynamoStoreContended)) throw error;
    }
  }
  return promoted;
}

/** The session item of `key` (strongly consistent), or undefined. */
export async function getSessionItem(ctx: StoreContext, key: SessionKey): Promise<Item | undefined> {
  const res = await ctx.dynamo.send(new GetItemCommand({ TableName: ctx.table, Key: sessionItemKey(key), ConsistentRead: true }));
  return res.Item;
}
