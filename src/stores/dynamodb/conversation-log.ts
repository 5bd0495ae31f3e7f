/**
 * Conversations and their record logs. The conversation of a session key lives on the session
 * item (`convId`, `convCreatedAt`). A log is a partition `CONV#<id>`: a head item (`HEAD`, the
 * id of the last visible record) and one item per record (`R#<recordId>`).
 *
 * Appends are transactions conditioned on the head: the head the ids were minted from (and the
 * caller's `expectedHead`), each record put only if absent, plus a ConditionCheck on the fenced
 * submission's state item (running under the attempt). Readers take the head with a strongly
 * consistent read and then Query only up to it, strongly consistent: every record at or below
 * a committed head is committed, so a reader never skips a record that shows up later below
 * its offset. Records are never written with BatchWriteItem.
 *
 * A batch that exceeds one transaction (100 items) is split into chunks appended in order, each
 * chunk chained on the previous chunk's head and fenced again: visibility is then per chunk, in
 * order (a reader sees a prefix of the batch, never a gap), and a chunk refused by the fence
 * leaves the earlier chunks in place. Payloads over the spill threshold go to S3, as do the
 * largest ones whenever a chunk would pass the 4 MB transaction limit.
 */
import { randomUUID } from "node:crypto";
import { GetItemCommand, type TransactWriteItem, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { isValid } from "ulid";
import { nextRecordIds } from "../../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../../conversation/records.ts";
import { ClaimLost, ConversationNotFound } from "../../errors.ts";
import type { AppendOptions } from "../../ports/store.ts";
import { type Conversation, type SessionKey, sessionKeyString } from "../../ports/submission.ts";
import type { StoreContext } from "./context.ts";
import { queryAll } from "./query.ts";
import { conditionRefusal, failedCondition, isTransientCancellation } from "./errors.ts";
import { Expr } from "./expression.ts";
import { type Item, itemBytes, N, reqNum, reqStr, S, str } from "./item.ts";
import { conversationPk, HEAD_SK, RECORD_PREFIX, recordSk } from "./keys.ts";
import { loadState } from "./loader.ts";
import { RetryStep, rerunOnRace } from "./retry.ts";
import { getSessionItem, sessionItemKey } from "./session-head.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { stateKey } from "./submission-item.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";

/** Items per transaction (DynamoDB's limit). */
const MAX_TX_ITEMS = 100;
/** Bytes of record items per transaction: under the 4 MB limit with room for keys and overhead. */
const TX_RECORD_BYTES = 3_500_000;

/** One append: the public `appendRecords`, or a drain that adds items to every chunk. */
export interface AppendPlan {
  conversationId: string;
  drafts: RecordDraft[];
  expectedHead?: string;
  fence?: { submissionId: string; attemptId: string };
  /** Instead of a ConditionCheck, update the fenced state item (same fence condition). */
  fenceUpdate?: (chunk: ConversationRecord[], first: number) => Expr;
  /** Further items per chunk, after the records; `first` is the chunk's index in the batch. */
  extraItems?: (chunk: ConversationRecord[], first: number) => TransactWriteItem[];
  /** How many `extraItems` each record brings (sizes the chunks). */
  extraPerRecord?: number;
  /** Called with each committed chunk's records (a later chunk may still fail). */
  onChunk?: (records: ConversationRecord[]) => void;
}

/**
 * An append whose `extraItems` failed their condition: the state they guard moved (e.g. another
 * drain delivered the messages), so the caller must rebuild its drafts from a fresh read.
 */
export class ExtrasRaced extends Error {
  constructor(conversationId: string) {
    super(`append to ${conversationId}: the items written along with the records moved`);
    this.name = "ExtrasRaced";
  }
}

interface PreparedRecord {
  /** The draft without `payload` and `id`, as JSON. */
  rest: string;
  /** The payload as JSON. */
  payload: string;
  /** The payload's S3 digest once spilled (the item then holds this instead of the payload). */
  payloadRef?: string;
}

export class ConversationLog {
  readonly #ctx: StoreContext;
  readonly #appending = new KeyedLock();

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    const ctx = this.#ctx;
    const existing = conversationOf(await getSessionItem(ctx, candidate.key));
    if (existing) return { conversation: existing, created: false };
    const e = new Expr()
      .set("convId", S(candidate.id))
      .set("convCreatedAt", N(candidate.createdAt))
      .set("agent", S(candidate.key.agent))
      .set("instance", S(candidate.key.instance))
      .set("session", S(candidate.key.session));
    try {
      await ctx.dynamo.send(
        new UpdateItemCommand({
          TableName: ctx.table,
          Key: sessionItemKey(candidate.key),
          UpdateExpression: e.update,
          ConditionExpression: `attribute_not_exists(${e.n("convId")})`,
          ...e.attributes,
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
    } catch (error) {
      const refusal = conditionRefusal(error);
      const raced = conversationOf(refusal?.item);
      if (!raced) throw error;
      // Another admission created it first (or this call's own earlier try: same candidate).
      return { conversation: raced, created: raced.id === candidate.id && raced.createdAt === candidate.createdAt };
    }
    return {
      conversation: { id: candidate.id, key: { ...candidate.key }, createdAt: candidate.createdAt },
      created: true,
    };
  }

  async getConversation(key: SessionKey): Promise<Conversation> {
    const conversation = conversationOf(await getSessionItem(this.#ctx, key));
    if (!conversation) throw new ConversationNotFound(sessionKeyString(key));
    return conversation;
  }

  appendRecords(conversationId: string, drafts: RecordDraft[], options: AppendOptions = {}): Promise<ConversationRecord[]> {
    return this.append({ conversationId, drafts, expectedHead: options.expectedHead, fence: options.fence });
  }

  /** Appends `plan.drafts` (see the file comment); returns the stored records. */
  append(plan: AppendPlan): Promise<ConversationRecord[]> {
    return this.#appending.run(plan.conversationId, () => this.#append(plan));
  }

  async #append(plan: AppendPlan): Promise<ConversationRecord[]> {
    if (plan.drafts.length === 0) {
      await this.#checkWithoutWriting(plan);
      return [];
    }
    const perChunk = Math.floor((MAX_TX_ITEMS - 2) / (1 + (plan.extraPerRecord ?? 0)));
    const out: ConversationRecord[] = [];
    let head = plan.expectedHead;
    let pinned = head !== undefined;
    for (let first = 0; first < plan.drafts.length; first += perChunk) {
      const prepared = await this.#prepare(plan.drafts.slice(first, first + perChunk));
      const records = await rerunOnRace("appendRecords", async () => {
        if (head === undefined) head = await this.readHead(plan.conversationId);
        const from: string = head;
        const result = await this.#appendChunk(plan, prepared, from, first);
        if (result === "head-moved") {
          if (pinned) throw new ClaimLost(`conversation ${plan.conversationId} head is no longer ${from || "empty"}`);
          head = undefined;
          throw new RetryStep("head moved");
        }
        return result;
      }, 50);
      out.push(...records);
      plan.onChunk?.(records);
      head = records[records.length - 1]!.id;
      // Later chunks must chain on exactly this head: another author in between is a lost race.
      pinned = true;
    }
    return out;
  }

  /** The id of the last visible record ("" when none), strongly consistent. */
  async readHead(conversationId: string): Promise<string> {
    const res = await this.#ctx.dynamo.send(
      new GetItemCommand({
        TableName: this.#ctx.table,
        Key: { pk: S(conversationPk(conversationId)), sk: S(HEAD_SK) },
        ConsistentRead: true,
      }),
    );
    return str(res.Item, "head") ?? "";
  }

  async readRecords(conversationId: string, afterId = "", limit?: number): Promise<ConversationRecord[]> {
    const max = limit === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.floor(limit));
    if (max === 0) return [];
    const head = await this.readHead(conversationId);
    if (head === "" || (afterId !== "" && afterId >= head)) return [];
    // Record ids hold no character below "!", so "sk > R#<afterId>" equals "sk >= R#<afterId> ".
    const lo = afterId === "" ? RECORD_PREFIX : `${recordSk(afterId)} `;
    const items = await queryAll(
      this.#ctx,
      {
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
        ExpressionAttributeValues: { ":pk": S(conversationPk(conversationId)), ":lo": S(lo), ":hi": S(recordSk(head)) },
        ConsistentRead: true,
      },
      max,
    );
    return Promise.all(items.map((item) => this.#recordOf(item)));
  }

  /** One chunk's transaction: its stored records, or "head-moved". */
  async #appendChunk(
    plan: AppendPlan,
    prepared: PreparedRecord[],
    head: string,
    first: number,
  ): Promise<ConversationRecord[] | "head-moved"> {
    const ctx = this.#ctx;
    const ids = mintIds(plan.conversationId, head, prepared.length, ctx.clock.now());
    const token = randomUUID();
    // Built from the JSON that is stored, so the caller gets what every reader will get.
    const records = prepared.map((p, i) => recordFrom(ids[i]!, p.rest, p.payload));

    // The head carries this call's token, so a retry of a committed-but-unanswered try knows it.
    const h = new Expr().set("head", S(ids[ids.length - 1]!)).set("appendTx", S(token));
    const headCondition = head === "" ? `attribute_not_exists(${h.n("head")})` : `${h.n("head")} = ${h.v(S(head))}`;
    const items: TransactWriteItem[] = [
      updateItem(ctx, { pk: S(conversationPk(plan.conversationId)), sk: S(HEAD_SK) }, h, headCondition),
    ];
    const fenceIndex = plan.fence ? items.length : -1;
    if (plan.fence) items.push(this.#fenceItem(plan, records, first));
    const recordStart = items.length;
    prepared.forEach((p, i) => items.push(putNewItem(ctx, this.#recordItem(plan.conversationId, ids[i]!, p))));
    if (plan.extraItems) items.push(...plan.extraItems(records, first));

    const reasons = await transact(ctx, items);
    if (!reasons) return records;
    if (failedCondition(reasons, 0)) {
      // This call's own earlier try committed (its response was lost).
      if (str(reasons[0]!.Item, "appendTx") === token) return records;
      return "head-moved";
    }
    if (fenceIndex >= 0 && failedCondition(reasons, fenceIndex)) {
      throw new ClaimLost(`submission ${plan.fence!.submissionId} is not running under attempt ${plan.fence!.attemptId}`);
    }
    if (reasons.slice(recordStart, recordStart + prepared.length).some((r) => r.Code === "ConditionalCheckFailed")) {
      throw new ClaimLost(`a record id minted after ${head || "the start"} already exists in ${plan.conversationId}`);
    }
    if (reasons.slice(recordStart + prepared.length).some((r) => r.Code === "ConditionalCheckFailed")) {
      throw new ExtrasRaced(plan.conversationId);
    }
    if (isTransientCancellation(reasons)) throw new RetryStep("append conflicted");
    throw new ClaimLost(`append to ${plan.conversationId} refused (${reasons.map((r) => r.Code).join(",")})`);
  }

  #fenceItem(plan: AppendPlan, records: ConversationRecord[], first: number): TransactWriteItem {
    const fence = plan.fence!;
    const e = plan.fenceUpdate ? plan.fenceUpdate(records, first) : new Expr();
    const condition = `${e.n("status")} = ${e.v(S("running"))} AND ${e.n("attemptId")} = ${e.v(S(fence.attemptId))}`;
    if (plan.fenceUpdate) return updateItem(this.#ctx, stateKey(fence.submissionId), e, condition);
    return {
      ConditionCheck: {
        TableName: this.#ctx.table,
        Key: stateKey(fence.submissionId),
        ConditionExpression: condition,
        ...e.attributes,
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      },
    };
  }

  /** An empty append still answers whether its conditions hold. */
  async #checkWithoutWriting(plan: AppendPlan): Promise<void> {
    if (plan.expectedHead !== undefined && (await this.readHead(plan.conversationId)) !== plan.expectedHead) {
      throw new ClaimLost(`conversation ${plan.conversationId} head is not ${plan.expectedHead || "empty"}`);
    }
    if (plan.fence) {
      const state = await loadState(this.#ctx, plan.fence.submissionId);
      if (str(state, "status") !== "running" || str(state, "attemptId") !== plan.fence.attemptId) {
        throw new ClaimLost(`submission ${plan.fence.submissionId} is not running under attempt ${plan.fence.attemptId}`);
      }
    }
  }

  /** Splits payloads off to S3: each over the threshold, then the largest while a chunk is too big. */
  async #prepare(drafts: RecordDraft[]): Promise<PreparedRecord[]> {
    const ctx = this.#ctx;
    const prepared = drafts.map((draft): PreparedRecord => {
      const { payload, ...rest } = draft;
      delete (rest as { id?: unknown }).id;
      return { rest: JSON.stringify(rest), payload: JSON.stringify(payload) };
    });
    const inlineBytes = (p: PreparedRecord) => (p.payloadRef === undefined ? Buffer.byteLength(p.payload) : 0);
    const spill = async (p: PreparedRecord) => {
      p.payloadRef = await ctx.blobs.putText(p.payload);
    };
    await Promise.all(prepared.filter((p) => inlineBytes(p) > ctx.spillThresholdBytes).map(spill));
    let total = prepared.reduce((sum, p) => sum + Buffer.byteLength(p.rest) + inlineBytes(p) + 200, 0);
    for (const p of [...prepared].sort((a, b) => inlineBytes(b) - inlineBytes(a))) {
      if (total <= TX_RECORD_BYTES) break;
      total -= inlineBytes(p);
      await spill(p);
    }
    return prepared;
  }

  #recordItem(conversationId: string, id: string, p: PreparedRecord): Item {
    const item: Item = { pk: S(conversationPk(conversationId)), sk: S(recordSk(id)), rec: S(p.rest) };
    if (p.payloadRef !== undefined) item.payloadRef = S(p.payloadRef);
    else item.payload = S(p.payload);
    if (itemBytes(item) > 390_000) throw new Error(`record ${id} is too large for an item even with its payload spilled`);
    return item;
  }

  async #recordOf(item: Item): Promise<ConversationRecord> {
    const id = reqStr(item, "sk").slice(RECORD_PREFIX.length);
    const inline = str(item, "payload");
    const payload = inline ?? (await this.#ctx.blobs.getText(reqStr(item, "payloadRef")));
    return recordFrom(id, reqStr(item, "rec"), payload);
  }
}

/**
 * Ids after `head`. A head that is not a ULID was never minted here, so it cannot be the
 * conversation's head: the append's head condition is bound to fail.
 */
function mintIds(conversationId: string, head: string, count: number, now: number): string[] {
  if (head !== "" && !isValid(head)) throw new ClaimLost(`conversation ${conversationId} head is not ${head}`);
  return nextRecordIds(head, count, now);
}

function recordFrom(id: string, rest: string, payload: string): ConversationRecord {
  return { id, ...JSON.parse(rest), payload: JSON.parse(payload) } as ConversationRecord;
}

/** The conversation a session item holds, or undefined. */
function conversationOf(item: Item | undefined): Conversation | undefined {
  const id = str(item, "convId");
  if (!item || id === undefined) return undefined;
  return {
    id,
    key: { agent: reqStr(item, "agent"), instance: reqStr(item, "instance"), session: reqStr(item, "session") },
    createdAt: reqNum(item, "convCreatedAt"),
  };
}
