/**
 * Deleting a session's conversation on DynamoDB + S3 (ADR 0034). Many writes, so it is made
 * resumable rather than atomic:
 * 1. The session item is marked `deleting` (conditioned on no unsettled submission): from then
 *    on admission refuses the session (`SessionBusy`), so nothing new arrives while it goes.
 * 2. Each submission's partition (`SUB#<id>`: input, state, attempts, inbox, call waits with
 *    their callback pointers, blob references)
 *    and then its member item; then the conversation's partition (record batches, checkpoint,
 *    blob references) and its checkpoint object. Before an owner's items go, each blob it
 *    references is released: its `BLOB#` reference is deleted and, when no other owner has one,
 *    the object too (`blob-refs.ts`).
 * 3. The session item, last: until then a retry finds the marked session and carries on.
 * Every step is idempotent, so a second call after a finished deletion answers `deleted: false`
 * and a call after an interrupted one completes it.
 */
import { UpdateItemCommand, type WriteRequest } from "@aws-sdk/client-dynamodb";
import { SessionBusy } from "../errors.ts";
import type { ConversationDeletion } from "../store/store.ts";
import { type SessionKey, sessionKeyString } from "../store/submission.ts";
import { BLOB_REF_PREFIX, batchWrite, blobRefsPk } from "./blob-refs.ts";
import { checkpointObjectKey } from "./checkpoints.ts";
import type { StoreContext } from "./context.ts";
import { conditionRefusal } from "./errors.ts";
import { Expr } from "./expression.ts";
import { type Item, N, num, reqStr, S, str } from "./item.ts";
import { conversationPk, sessionPk, submissionPk } from "./keys.ts";
import { queryAll } from "./query.ts";
import { loadState } from "./loader.ts";
import { rerunOnRace } from "./retry.ts";
import { getSessionItem, namesSubmission, resolveGapHead, sessionItemKey } from "./session-order.ts";

/** A fault seam for tests: called before each step with its name (throw to stop midway). */
export type DeletionStep = (step: string) => void | Promise<void>;

export async function deleteConversation(ctx: StoreContext, key: SessionKey, beforeStep?: DeletionStep): Promise<ConversationDeletion> {
  const found = await markedSession(ctx, key);
  if (!found) return { deleted: false, blobsDeleted: [] };
  const { conversationId, members } = found;
  const blobsDeleted: string[] = [];
  for (const member of members) {
    if (namesSubmission(member)) {
      await beforeStep?.(`submission ${reqStr(member, "submissionId")}`);
      await deletePartition(ctx, submissionPk(reqStr(member, "submissionId")), blobsDeleted);
    }
    await deleteKeys(ctx, [{ pk: member.pk!, sk: member.sk! }]);
  }
  await beforeStep?.("conversation");
  await deletePartition(ctx, conversationPk(conversationId), blobsDeleted);
  await ctx.blobs.deleteKeyed(checkpointObjectKey(conversationId));
  await beforeStep?.("session");
  await deleteKeys(ctx, [sessionItemKey(key)]);
  return { deleted: true, conversationId, blobsDeleted };
}

/**
 * `Store.reserveDeletion`: step 1 alone (the session marked `deleting`, conditioned on nothing
 * unsettled). True when this call set the mark; false without a conversation or when marked already.
 */
export async function reserveDeletion(ctx: StoreContext, key: SessionKey): Promise<boolean> {
  const found = await markedSession(ctx, key);
  return found?.marked === true;
}

/**
 * `Store.releaseDeletion`: clears the mark a reservation set (a deletion refused elsewhere in its
 * tree, before it deleted anything). Conditioned on the mark: a session deleted meanwhile stays deleted.
 */
export async function releaseDeletion(ctx: StoreContext, key: SessionKey): Promise<void> {
  const e = new Expr().remove("deleting");
  try {
    await ctx.dynamo.send(
      new UpdateItemCommand({
        TableName: ctx.table,
        Key: sessionItemKey(key),
        UpdateExpression: e.update,
        ConditionExpression: `attribute_exists(${e.n("deleting")})`,
        ...e.attributes,
      }),
    );
  } catch (error) {
    if (!conditionRefusal(error)) throw error;
  }
}

/**
 * The session's conversation and its members, marked `deleting` (by this call: `marked`, or by an
 * earlier one); undefined without a conversation. `SessionBusy` while a submission is unsettled.
 */
async function markedSession(ctx: StoreContext, key: SessionKey): Promise<{ conversationId: string; members: Item[]; marked: boolean } | undefined> {
  let session = await getSessionItem(ctx, key);
  if (session && str(session, "deleting") === undefined && str(session, "headId") === undefined) {
    // A pointer waiting at a reserved number (an admitter gone, ADR 0035) is no busy session.
    // A move that stays raced is re-run from a fresh read, like every store step.
    let read: Item | undefined = session;
    await rerunOnRace("deleteConversation", async () => {
      const current = read ?? (await getSessionItem(ctx, key));
      read = undefined;
      await resolveGapHead(ctx, key, current);
    });
    session = await getSessionItem(ctx, key);
  }
  const conversationId = str(session, "convId");
  if (!session || conversationId === undefined) return undefined;
  const members = await queryAll(ctx, {
    KeyConditionExpression: "pk = :pk AND begins_with(sk, :q)",
    ExpressionAttributeValues: { ":pk": S(sessionPk(key)), ":q": S("Q#") },
    ConsistentRead: true,
  });
  if (str(session, "deleting") !== undefined) return { conversationId, members, marked: false };
  // Any unsettled submission, the head's queue or a delayed message outside it, refuses.
  const states = await Promise.all(members.filter(namesSubmission).map((m) => loadState(ctx, reqStr(m, "submissionId"))));
  if (states.some((s) => s !== undefined && str(s, "status") !== "settled")) throw new SessionBusy(sessionKeyString(key));
  await markDeleting(ctx, key, session);
  return { conversationId, members, marked: true };
}

/** Marks the session as being deleted, unless a submission of it is unsettled (`SessionBusy`). */
async function markDeleting(ctx: StoreContext, key: SessionKey, session: Item): Promise<void> {
  const admitted = num(session, "admitSeq") ?? 0;
  const headSeq = num(session, "headSeq") ?? 1;
  if (headSeq <= admitted) throw new SessionBusy(sessionKeyString(key));
  const e = new Expr().set("deleting", S(reqStr(session, "convId")));
  const condition = admitted === 0
    ? `attribute_not_exists(${e.n("admitSeq")})`
    : `${e.n("admitSeq")} = ${e.v(N(admitted))} AND ${e.n("headSeq")} = ${e.v(N(headSeq))}`;
  try {
    await ctx.dynamo.send(
      new UpdateItemCommand({ TableName: ctx.table, Key: sessionItemKey(key), UpdateExpression: e.update, ConditionExpression: condition, ...e.attributes }),
    );
  } catch (error) {
    // Admitted meanwhile: that submission runs first.
    if (conditionRefusal(error)) throw new SessionBusy(sessionKeyString(key));
    throw error;
  }
}

/** Releases the blobs `pk` references, then deletes every item of the partition. */
async function deletePartition(ctx: StoreContext, pk: string, blobsDeleted: string[]): Promise<void> {
  const items = await queryAll(ctx, {
    KeyConditionExpression: "pk = :pk",
    ExpressionAttributeValues: { ":pk": S(pk) },
    ProjectionExpression: "pk, sk, digest, body",
    ConsistentRead: true,
  });
  for (const item of items) {
    // A callback's pointer (`CB#<digest>`, ADR 0025) lives outside the partition: it goes first.
    const callback = reqStr(item, "sk").startsWith("CALL#") ? callbackDigestOf(str(item, "body")) : undefined;
    if (callback !== undefined) await deleteKeys(ctx, [{ pk: S(`CB#${callback}`), sk: S("CB") }]);
    if (!reqStr(item, "sk").startsWith(BLOB_REF_PREFIX)) continue;
    const digest = reqStr(item, "digest");
    await deleteKeys(ctx, [{ pk: S(blobRefsPk(digest)), sk: S(pk) }]);
    const others = await queryAll(
      ctx,
      { KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": S(blobRefsPk(digest)) }, ConsistentRead: true },
      1,
    );
    if (others.length > 0) continue;
    await ctx.blobs.delete(digest);
    if (!blobsDeleted.includes(digest)) blobsDeleted.push(digest);
  }
  await deleteKeys(ctx, items.map((item) => ({ pk: item.pk!, sk: item.sk! })));
}

/** The callback digest a call wait's registration names, if any. */
function callbackDigestOf(body: string | undefined): string | undefined {
  if (body === undefined) return undefined;
  const digest = (JSON.parse(body) as { callbackDigest?: unknown }).callbackDigest;
  return typeof digest === "string" ? digest : undefined;
}

async function deleteKeys(ctx: StoreContext, keys: Item[]): Promise<void> {
  await batchWrite(ctx, keys.map((Key): WriteRequest => ({ DeleteRequest: { Key } })));
}
