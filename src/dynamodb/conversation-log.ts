/**
 * Writing a conversation's record log. A log is a partition `CONV#<id>` holding a chain of
 * batch items, one per committed append (`log-batch.ts`); `log-reader.ts` reads it back and
 * `conversations.ts` keeps which conversation a session key has.
 *
 * An append is one conditional PutItem of the batch that follows the tail: the key `L#<tail>`
 * can be taken once, so concurrent writers are ordered by DynamoDB and a loser re-reads the
 * tail. No head item and no transaction: an append costs the batch's size in write units, not
 * twice that plus a head and a fence item. The batch becomes visible at once; a reader that
 * sees a batch sees every batch before it (each was committed before its successor's writer
 * could know its end), so a tailing reader never skips.
 *
 * The fence (`submission running under attempt`) has two halves. Each fenced append reads the
 * submission's state first (strongly consistent; refuses when it does not hold), and each batch
 * carries the highest claim epoch written so far (`log-epoch.ts`): a writer refuses to append
 * after a later claim's epoch. A new owner writes a takeover marker (a batch without records)
 * before it reads the log, and a settlement record closes its submission's epochs, so a stale
 * writer that passed its state check just before losing the claim cannot slip in after them.
 * A drain's append (`inbox.ts`) is the one transaction: it must update the inbox atomically.
 *
 * An append larger than one item (300 KB of record JSON) is split into batches appended in
 * order, each chained on the previous one: visibility is then per batch, in order (a reader sees
 * a prefix, never a gap). Payloads over the spill threshold go to S3.
 */
import { randomUUID } from "node:crypto";
import {
  PutItemCommand,
  QueryCommand,
  type TransactWriteItem,
} from "@aws-sdk/client-dynamodb";
import { decodeTime, isValid } from "ulid";
import { isStreamingDelta } from "../conversation/checkpoint.ts";
import { nextRecordIds } from "../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost } from "../errors.ts";
import type { AppendFence, AppendOptions } from "../store/store.ts";
import { noteBlobRefs } from "./blob-refs.ts";
import { BoundedMap } from "./bounded-map.ts";
import { registrationItems } from "./call-wait-items.ts";
import type { StoreContext } from "./context.ts";
import { conditionRefusal, DynamoStoreContended, failedCondition, isTransientCancellation } from "./errors.ts";
import { Expr } from "./expression.ts";
import { bool, type Item, itemBytes, S, str } from "./item.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { conversationPk } from "./keys.ts";
import { loadState } from "./loader.ts";
import {
  BATCH_KEY_END,
  BATCH_PREFIX,
  type BatchHeader,
  batchHeader,
  encodeBatch,
  foldBatchDeltasAt,
  recordFrom,
  type StoredRecord,
} from "./log-batch.ts";
import { claimEpoch, closingEpoch, maxEpoch } from "./log-epoch.ts";
import type { LogReader } from "./log-reader.ts";
import { cancellationOf, stateKey } from "./submission-item.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";

/** Items per transaction (DynamoDB's limit). */
const MAX_TX_ITEMS = 100;
/** Record JSON per batch item: under the 400 KB item limit with room for keys and header. */
const BATCH_BYTES = 300_000;
/** Tries of one batch against other writers before giving up (each loss means progress elsewhere). */
const MAX_RACES = 50;

/** One append: the public `appendRecords`, or a drain that writes more items with the batch. */
export interface AppendPlan {
  conversationId: string;
  drafts: RecordDraft[];
  expectedHead?: string;
  fence?: AppendFence;
  /**
   * The fenced claim's epoch, from a state item the caller has just read and checked (a drain):
   * spares the append its own state read. Only with `fenceUpdate`, whose transaction re-checks
   * the fence atomically.
   */
  fenceEpoch?: string;
  /**
   * Makes the append a transaction with an update of the fenced state item (under the fence
   * condition) and `extraItems`: for writes that must commit together with the records.
   */
  fenceUpdate?: (batch: ConversationRecord[], first: number) => Expr;
  /** Further items per batch; `first` is the batch's index in the append. */
  extraItems?: (batch: ConversationRecord[], first: number) => TransactWriteItem[];
  /** How many `extraItems` each record brings (sizes the batches to fit one transaction). */
  extraPerRecord?: number;
  /** Called with each committed batch's records (a later batch may still fail). */
  onChunk?: (records: ConversationRecord[]) => void;
  /**
   * Instead of a fence: the state item write that commits with the records, under its own
   * condition (the wake of a waiting parent, `child-outcome.ts`); refused → {@link StateRefused}.
   */
  stateWrite?: { submissionId: string; update: Expr; condition: string };
}

/** An append's `stateWrite` failed its condition; `current` is the state item as it is now. */
export class StateRefused extends Error {
  readonly current: Item | undefined;
  constructor(submissionId: string, current: Item | undefined) {
    super(`the state of ${submissionId} moved`);
    this.name = "StateRefused";
    this.current = current;
  }
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

/** A draft ready to store: JSON without the id (minted per try), payload inline or spilled. */
interface PreparedRecord {
  rest: string;
  payload: string;
  payloadRef?: string;
  /** A streaming delta (ADR 0034: it folds with its turn). */
  delta: boolean;
  /** A delta's turn's start (its turn id is a ULID of it), when it has one. */
  turnStart?: number;
}

/** One batch to write: its records, and what it must hold against. */
interface BatchWrite {
  conversationId: string;
  prepared: PreparedRecord[];
  /** The head the batch must follow (`ClaimLost` otherwise). */
  pinnedHead?: string;
  fence?: AppendFence;
  /** The fenced claim's epoch: refuse to follow a batch with a higher one. */
  fenceEpoch?: string;
  /** The epoch this batch raises the log to (its claim's, or a settlement's closing one). */
  epoch?: string;
  /**
   * The closing epoch of a submission whose settlement record the append holds: refuse to follow
   * a batch at or above it (that submission is settled already, or a later one has run).
   */
  closing?: string;
  /** Set for a drain: the transaction's other items. */
  plan?: AppendPlan;
  first: number;
}

type Tail = BatchHeader & { fromCache: boolean };

const EMPTY_LOG: BatchHeader = { end: "", head: "", epoch: "", tx: "" };

export class ConversationLog {
  readonly #ctx: StoreContext;
  readonly #appending = new KeyedLock();
  /** The last batch of each conversation this process wrote or read (the put re-checks it). */
  readonly #tails = new BoundedMap<string, BatchHeader>(1_000);
  readonly #reader: LogReader;

  constructor(ctx: StoreContext, reader: LogReader) {
    this.#ctx = ctx;
    this.#reader = reader;
    // A read's sight of the tail, unless this process has its own (possibly newer) one.
    reader.onTail = (conversationId, tail) => {
      if (!this.#tails.has(conversationId)) this.#tails.set(conversationId, tail);
    };
  }

  async appendRecords(conversationId: string, drafts: RecordDraft[], options: AppendOptions = {}): Promise<ConversationRecord[]> {
    const plan: AppendPlan = { conversationId, drafts, expectedHead: options.expectedHead, fence: options.fence };
    // Records that announce a call wait register it in the same transaction (ADR 0025).
    if (!options.copied && drafts.some((d) => d.kind === "approval_requested" || d.kind === "callback_started")) {
      const registrations = await registrationItems(this.#ctx, drafts);
      plan.extraItems = (batch, first) => batch.flatMap((_, i) => registrations.get(first + i) ?? []);
      plan.extraPerRecord = 2;
    }
    return this.append(plan);
  }

  /** Appends `plan.drafts` (see the file comment); returns the stored records. */
  append(plan: AppendPlan): Promise<ConversationRecord[]> {
    // One writer per conversation per process: the same answer as racing through the key
    // condition, without a storm of refused (and billed) puts.
    return this.#appending.run(plan.conversationId, () => this.#append(plan));
  }

  /**
   * Writes a takeover marker raising the log to `epoch`: a re-claimed submission's new owner
   * calls this before reading the log, so its predecessor's late appends are refused (and a
   * cancel, before it settles a submission claimed before, to retire its attempts).
   */
  markTakeover(conversationId: string, epoch: string): Promise<void> {
    return this.#appending.run(conversationId, async () => {
      await this.#appendBatch({ conversationId, prepared: [], epoch, first: 0 });
    });
  }

  async #append(plan: AppendPlan): Promise<ConversationRecord[]> {
    let fenceEpoch: string | undefined;
    if (plan.fence) fenceEpoch = plan.fenceUpdate && plan.fenceEpoch !== undefined ? plan.fenceEpoch : await this.#fenceEpoch(plan.fence);
    if (plan.drafts.length === 0) {
      if (plan.expectedHead !== undefined && !(await this.headIs(plan.conversationId, plan.expectedHead))) {
        throw new ClaimLost(`conversation ${plan.conversationId} head is not ${plan.expectedHead || "empty"}`);
      }
      return [];
    }
    const closing = await this.#closingEpoch(plan.conversationId, plan.drafts);
    const epoch = maxEpoch(fenceEpoch, closing);
    const transactional = plan.fenceUpdate || plan.extraItems || plan.stateWrite;
    const perBatch = transactional ? Math.floor((MAX_TX_ITEMS - 2) / (plan.extraPerRecord ?? 1)) : Infinity;
    const out: ConversationRecord[] = [];
    let pinnedHead = plan.expectedHead;
    for (const { first, prepared } of await this.#pack(plan.conversationId, plan.drafts, perBatch)) {
      const records = await this.#appendBatch({
        conversationId: plan.conversationId,
        prepared,
        pinnedHead,
        fence: plan.fence,
        fenceEpoch,
        epoch,
        // Only the first batch: the append's own batches raise the log to the closing epoch.
        closing: first === 0 ? closing : undefined,
        plan: transactional ? plan : undefined,
        first,
      });
      out.push(...records);
      plan.onChunk?.(records);
      // Later batches must follow exactly this one: another author in between is a lost race.
      pinnedHead = records[records.length - 1]!.id;
    }
    return out;
  }

  /** Puts one batch after the tail, re-reading the tail when another writer took the slot. */
  async #appendBatch(w: BatchWrite): Promise<ConversationRecord[]> {
    const ctx = this.#ctx;
    for (let races = 0; ; races++) {
      if (races >= MAX_RACES) throw new DynamoStoreContended(`append to ${w.conversationId}`, races);
      // A caller that expects an empty log (a conversation's first record, written as it is
      // created) is taken at its word on the first try: the put on the empty log's key is refused
      // if the log has a batch, and the tail is read then (one read saved per new conversation).
      const tail =
        races === 0 && w.pinnedHead === "" && !this.#tails.has(w.conversationId)
          ? { ...EMPTY_LOG, fromCache: true }
          : await this.#tail(w.conversationId, races === 0);
      if (w.pinnedHead !== undefined && tail.head !== w.pinnedHead) {
        if (tail.fromCache) continue;
        throw new ClaimLost(`conversation ${w.conversationId} head is no longer ${w.pinnedHead || "empty"}`);
      }
      if (w.fenceEpoch !== undefined && tail.epoch > w.fenceEpoch) {
        if (tail.fromCache) continue;
        throw new ClaimLost(
          `submission ${w.fence!.submissionId} is not running under attempt ${w.fence!.attemptId}: the log has moved on to a later claim or its settlement`,
        );
      }
      if (w.closing && tail.epoch >= w.closing) {
        if (tail.fromCache) continue;
        throw new ClaimLost(
          `conversation ${w.conversationId}: the log already holds the settlement of this submission (or a later submission's claim)`,
        );
      }
      // A marker mints one id, so the batches after it chain on it.
      const ids = mintIds(w.conversationId, tail.end, Math.max(1, w.prepared.length), ctx.clock.now());
      const stored: StoredRecord[] = w.prepared.map((p, i) => ({ ...p, rest: withId(p.rest, ids[i]!) }));
      const end = ids[ids.length - 1]!;
      const header: BatchHeader = {
        end,
        head: w.prepared.length > 0 ? end : tail.head,
        epoch: maxEpoch(tail.epoch, w.epoch),
        tx: randomUUID(),
      };
      const item = encodeBatch(w.conversationId, tail.end, header, stored);
      // Lean history: a batch of deltas only expires; never one that raises the epoch, as a later
      // writer must find the highest epoch on a batch that stays.
      const foldAt = this.#foldAt(w.prepared, ids);
      if (foldAt !== undefined) {
        const deltasOnly = header.epoch === tail.epoch && w.prepared.every((p) => p.delta);
        foldBatchDeltasAt(item, foldAt, deltasOnly);
      }
      if (itemBytes(item) > 390_000) throw new Error(`a batch of ${w.conversationId} is too large for an item even with its payloads spilled`);
      // Built from the JSON that is stored, so the caller gets what every reader will get.
      const records = stored.map((s) => recordFrom(s.rest, s.payload!));
      const outcome = w.plan ? await this.#putWithItems(w, item, records) : await this.#put(item);
      if (outcome === "raced") {
        this.#tails.delete(w.conversationId);
        continue;
      }
      this.#tails.set(w.conversationId, header);
      if (records.length > 0) this.#reader.noteBatchEnd(w.conversationId, end);
      return records;
    }
  }

  /**
   * When a batch's deltas fold: their turn's start plus the retention, so a turn's deltas fold
   * together; never counted from before the delta's own id (a turn id from a clock ahead of the
   * log's), nor from the writer's clock, which may run behind the log's ids.
   */
  #foldAt(prepared: PreparedRecord[], ids: string[]): number | undefined {
    if (!Number.isFinite(this.#ctx.deltaRetentionMs)) return undefined;
    let at: number | undefined;
    prepared.forEach((p, i) => {
      if (!p.delta) return;
      const base = Math.min(p.turnStart ?? Number.POSITIVE_INFINITY, decodeTime(ids[i]!)) + this.#ctx.deltaRetentionMs;
      at = at === undefined ? base : Math.max(at, base);
    });
    return at;
  }

  /** The conditional put of a batch; "raced" when another batch holds its key. */
  async #put(item: Item): Promise<"committed" | "raced"> {
    try {
      await this.#ctx.dynamo.send(
        new PutItemCommand({
          TableName: this.#ctx.table,
          Item: item,
          ConditionExpression: "attribute_not_exists(pk)",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return "committed";
    } catch (error) {
      const refusal = conditionRefusal(error);
      if (!refusal) throw error;
      // This call's own earlier try committed (its response was lost and the SDK retried).
      return str(refusal.item, "tx") === str(item, "tx") ? "committed" : "raced";
    }
  }

  /** A drain's batch: one transaction with the fenced state update and the extra items. */
  async #putWithItems(w: BatchWrite, item: Item, records: ConversationRecord[]): Promise<"committed" | "raced"> {
    const plan = w.plan!;
    const write = plan.stateWrite;
    const fence = w.fence;
    // The state item's part: the caller's write, or the fence (an update when the plan has one,
    // else a check); an unfenced append of records that register call waits has none.
    let stateItem: TransactWriteItem | undefined;
    if (write) stateItem = updateItem(this.#ctx, stateKey(write.submissionId), write.update, write.condition);
    else if (fence) {
      const e = plan.fenceUpdate ? plan.fenceUpdate(records, w.first) : new Expr();
      const held = `${e.n("status")} = ${e.v(S("running"))} AND ${e.n("attemptId")} = ${e.v(S(fence.attemptId))}`;
      stateItem = plan.fenceUpdate
        ? updateItem(this.#ctx, stateKey(fence.submissionId), e, held)
        : { ConditionCheck: { TableName: this.#ctx.table, Key: stateKey(fence.submissionId), ConditionExpression: held, ...e.attributes, ReturnValuesOnConditionCheckFailure: "ALL_OLD" } };
    }
    const items: TransactWriteItem[] = [putNewItem(this.#ctx, item), ...(stateItem ? [stateItem] : [])];
    const extrasFrom = items.length;
    if (plan.extraItems) items.push(...plan.extraItems(records, w.first));
    // The SDK reuses the transaction's ClientRequestToken on its retries: a lost response is
    // answered with the first outcome, never applied twice.
    const reasons = await transact(this.#ctx, items);
    if (!reasons) return "committed";
    if (failedCondition(reasons, 0)) return "raced";
    if (stateItem && failedCondition(reasons, 1) && write) throw new StateRefused(write.submissionId, reasons[1]?.Item as Item | undefined);
    if (stateItem && failedCondition(reasons, 1)) throw new ClaimLost(`submission ${fence!.submissionId} is not running under attempt ${fence!.attemptId}`);
    if (reasons.slice(extrasFrom).some((r) => r.Code === "ConditionalCheckFailed")) throw new ExtrasRaced(w.conversationId);
    if (isTransientCancellation(reasons)) return "raced";
    // Neither a lost race nor a refused condition (e.g. a ValidationError): a fault, not a lost claim.
    throw new Error(`append to ${w.conversationId} refused (${reasons.map((r) => r.Code).join(",")})`);
  }

  /** The fenced claim's epoch, after checking that the submission runs under the attempt. */
  async #fenceEpoch(fence: AppendFence): Promise<string> {
    const state = await loadState(this.#ctx, fence.submissionId);
    if (!state || str(state, "status") !== "running" || str(state, "attemptId") !== fence.attemptId) {
      throw new ClaimLost(`submission ${fence.submissionId} is not running under attempt ${fence.attemptId}`);
    }
    if (fence.onCancel && bool(state, "cancelRequested")) {
      fence.onCancel(cancellationOf(state) ?? { errorCode: "cancelled", error: "cancelled: cancelled by request" });
    }
    return claimEpoch(state);
  }

  /**
   * The highest closing epoch of the submissions whose settlement records are among the drafts,
   * of this conversation's submissions only: epochs count a session's claims, so a copy of
   * another session's settlement (a fork, an import) must not raise this log to its epoch.
   */
  async #closingEpoch(conversationId: string, drafts: RecordDraft[]): Promise<string | undefined> {
    const settled = [...new Set(drafts.filter((d) => d.kind === "submission_settled" && d.submissionId).map((d) => d.submissionId!))];
    if (settled.length === 0) return undefined;
    const states = await Promise.all(settled.map((id) => loadState(this.#ctx, id)));
    return maxEpoch(...states.map((s) => (s && str(s, "conversationId") === conversationId ? closingEpoch(s) : undefined)));
  }

  /** The log's last batch: this process's own last sight of it when `cached` allows, else read. */
  async #tail(conversationId: string, cached: boolean): Promise<Tail> {
    const known = cached ? this.#tails.get(conversationId) : undefined;
    if (known) return { ...known, fromCache: true };
    const res = await this.#ctx.dynamo.send(
      new QueryCommand({
        TableName: this.#ctx.table,
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
        ExpressionAttributeValues: { ":pk": S(conversationPk(conversationId)), ":lo": S(BATCH_PREFIX), ":hi": S(BATCH_KEY_END) },
        ProjectionExpression: "endId, headId, ep, tx",
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const last = res.Items?.[0];
    const header = last ? batchHeader(last) : EMPTY_LOG;
    this.#tails.set(conversationId, header);
    return { ...header, fromCache: false };
  }

  /**
   * Whether `expected` is the log's head. This process's own last sight of the tail answers a
   * match without a read (an append that writes nothing has nothing to guard: a writer whose head
   * has moved meanwhile learns it at its next append, which checks its head at the put); a
   * mismatch is read again.
   */
  async headIs(conversationId: string, expected: string): Promise<boolean> {
    const known = await this.#tail(conversationId, true);
    if (known.head === expected) return true;
    return known.fromCache && (await this.#tail(conversationId, false)).head === expected;
  }

  /** Spills payloads over the threshold to S3 and packs the drafts into batches of one item each. */
  async #pack(conversationId: string, drafts: RecordDraft[], perBatch: number): Promise<{ first: number; prepared: PreparedRecord[] }[]> {
    const ctx = this.#ctx;
    const prepared = drafts.map((draft): PreparedRecord => {
      const { payload, ...rest } = draft;
      delete (rest as { id?: unknown }).id;
      const p: PreparedRecord = { rest: JSON.stringify(rest), payload: JSON.stringify(payload), delta: isStreamingDelta(draft as ConversationRecord) };
      if (p.delta && draft.turnId !== undefined && isValid(draft.turnId)) p.turnStart = decodeTime(draft.turnId);
      return p;
    });
    await Promise.all(
      prepared
        .filter((p) => Buffer.byteLength(p.payload) > ctx.spillThresholdBytes)
        .map(async (p) => {
          p.payloadRef = await ctx.blobs.putText(p.payload);
        }),
    );
    // The blobs these records reference are the conversation's (ADR 0034), noted before the batch.
    const digests = prepared.map((p) => p.payloadRef);
    for (const draft of drafts) if (draft.kind === "user_message") digests.push(...(draft.payload.attachments ?? []).map((a) => a.digest));
    await noteBlobRefs(ctx, conversationPk(conversationId), digests);
    const batches: { first: number; prepared: PreparedRecord[] }[] = [];
    let bytes = 0;
    prepared.forEach((p, i) => {
      const size = Buffer.byteLength(p.rest) + (p.payloadRef === undefined ? Buffer.byteLength(p.payload) : 80) + 40;
      const current = batches[batches.length - 1];
      if (!current || current.prepared.length >= perBatch || bytes + size > BATCH_BYTES) {
        batches.push({ first: i, prepared: [p] });
        bytes = size;
      } else {
        current.prepared.push(p);
        bytes += size;
      }
    });
    return batches;
  }
}

/** A draft's JSON with its id first, as the record reads. */
function withId(rest: string, id: string): string {
  return rest === "{}" ? `{"id":${JSON.stringify(id)}}` : `{"id":${JSON.stringify(id)},${rest.slice(1)}`;
}

/**
 * Ids after `head`. A head that is not a ULID was never minted here, so it cannot be the
 * conversation's head: the append's head condition is bound to fail.
 */
function mintIds(conversationId: string, head: string, count: number, now: number): string[] {
  if (head !== "" && !isValid(head)) throw new ClaimLost(`conversation ${conversationId} head is not ${head}`);
  return nextRecordIds(head, count, now);
}
