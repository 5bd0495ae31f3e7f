import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import { idFloor, nextRecordIds } from "../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost, ConversationNotFound } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { AppendFence, AppendOptions, IdleConversationQuery } from "../store/store.ts";
import { type Conversation, type SessionKey, sessionKeyString } from "../store/submission.ts";
import { attachmentDigests } from "../conversation/attachment-digests.ts";
import { isStreamingDelta } from "../conversation/checkpoint.ts";
import { frozenCopy } from "./frozen-copy.ts";
import { freezeKey, sessionId } from "./rows.ts";

/** One conversation's log: frozen records, sorted by id (ids strictly increase on append). */
interface Log {
  ids: string[];
  records: ConversationRecord[];
  /** Submissions whose `submission_settled` record the log holds (one each). */
  settled: Set<string>;
}

/** A settled submission whose deltas are still in its log. */
interface Unfolded {
  conversationId: string;
  submissionId: string;
  settledAt: number;
}

/** Whether an append's fence (a submission running under an attempt) holds; the submissions part answers. */
export type FenceCheck = (fence: AppendFence) => boolean;

/**
 * The memory store's conversations and their logs. An append checks all its conditions (the
 * record head, the fence, a second settlement) before it writes anything, synchronously, so it
 * is atomic with respect to every other store operation.
 */
export class MemoryConversationLog {
  readonly #clock: Clock;
  readonly #fenceHolds: FenceCheck;
  readonly #conversations = new Map<string, Conversation>();
  readonly #logs = new Map<string, Log>();
  /** The newest checkpoint of each conversation (ADR 0018). */
  readonly #checkpoints = new Map<string, LogCheckpoint>();
  /** Settled submissions whose deltas are not folded yet, in settlement order. */
  #unfolded: Unfolded[] = [];

  constructor(clock: Clock, fenceHolds: FenceCheck) {
    this.#clock = clock;
    this.#fenceHolds = fenceHolds;
  }

  ensureConversation(candidate: Conversation): { conversation: Conversation; created: boolean } {
    const key = sessionId(candidate.key);
    const existing = this.#conversations.get(key);
    if (existing) return { conversation: { ...existing }, created: false };
    const conversation = Object.freeze({ id: candidate.id, key: freezeKey(candidate.key), createdAt: candidate.createdAt });
    this.#conversations.set(key, conversation);
    if (!this.#logs.has(conversation.id)) this.#logs.set(conversation.id, { ids: [], records: [], settled: new Set() });
    return { conversation: { ...conversation }, created: true };
  }

  /** `Store.listIdleConversations`: a scan of the conversations (the memory store is small). */
  idleConversations(query: IdleConversationQuery): Conversation[] {
    const floor = idFloor(query.idleSince);
    return [...this.#conversations.values()]
      .filter((c) => c.id > (query.after ?? ""))
      .filter((c) => {
        const last = this.#logs.get(c.id)?.ids.at(-1);
        return last === undefined ? c.createdAt < query.idleSince : last < floor;
      })
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .slice(0, query.limit)
      .map((c) => ({ ...c }));
  }

  getConversation(key: SessionKey): Conversation {
    const conversation = this.#conversations.get(sessionId(key));
    if (!conversation) throw new ConversationNotFound(sessionKeyString(key));
    return { ...conversation };
  }

  /** Checks the append's conditions, then writes the whole batch; throws before any write. */
  append(conversationId: string, drafts: readonly RecordDraft[], options: AppendOptions): ConversationRecord[] {
    let log = this.#logs.get(conversationId);
    const head = log && log.ids.length > 0 ? log.ids[log.ids.length - 1]! : "";
    if (options.expectedHead !== undefined && options.expectedHead !== head) {
      throw new ClaimLost(`append: expected head "${options.expectedHead}" but the head is "${head}"`);
    }
    if (options.fence && !this.#fenceHolds(options.fence)) {
      throw new ClaimLost(`append: fence ${options.fence.submissionId}/${options.fence.attemptId} does not hold`);
    }
    if (drafts.length === 0) return [];
    const settling = drafts.filter((d) => d.kind === "submission_settled" && d.submissionId !== undefined).map((d) => d.submissionId!);
    const again = settling.find((id) => log?.settled.has(id));
    if (again !== undefined) throw new ClaimLost(`append: the log already holds the settlement of submission ${again}`);
    const ids = nextRecordIds(head, drafts.length, this.#clock.now());
    const records = drafts.map((draft, i) => frozenRecord(ids[i]!, draft));
    if (!log) {
      log = { ids: [], records: [], settled: new Set() };
      this.#logs.set(conversationId, log);
    }
    for (const [i, record] of records.entries()) {
      log.ids.push(ids[i]!);
      log.records.push(record);
    }
    for (const id of settling) log.settled.add(id);
    return records;
  }

  /** The conversation of `key`, or undefined. */
  find(key: SessionKey): Conversation | undefined {
    const conversation = this.#conversations.get(sessionId(key));
    return conversation && { ...conversation };
  }

  /** Forgets the conversation of `key` with its log and checkpoint. */
  delete(key: SessionKey, conversationId: string): void {
    this.#conversations.delete(sessionId(key));
    this.#logs.delete(conversationId);
    this.#checkpoints.delete(conversationId);
    this.#unfolded = this.#unfolded.filter((u) => u.conversationId !== conversationId);
  }

  /** Whether any conversation's log references the attachment `digest`. */
  references(digest: string): boolean {
    for (const log of this.#logs.values()) {
      if (attachmentDigests(log.records).has(digest)) return true;
    }
    return false;
  }

  read(conversationId: string, afterId = "", limit?: number): ConversationRecord[] {
    const log = this.#logs.get(conversationId);
    if (!log) return [];
    const start = afterId === "" ? 0 : firstAfter(log.ids, afterId);
    const end = limit === undefined ? log.ids.length : Math.min(log.ids.length, start + Math.max(0, limit));
    return log.records.slice(start, end);
  }
  /** Notes that a submission settled now: its deltas fold `deltaRetentionMs` later (ADR 0034). */
  noteSettled(conversationId: string, submissionId: string): void {
    this.#unfolded.push({ conversationId, submissionId, settledAt: this.#clock.now() });
  }

  /** Removes the deltas of submissions settled at least `retentionMs` ago; answers how many. */
  foldDeltas(retentionMs: number): number {
    const cutoff = this.#clock.now() - retentionMs;
    const due = this.#unfolded.filter((u) => u.settledAt <= cutoff);
    if (due.length === 0) return 0;
    this.#unfolded = this.#unfolded.filter((u) => u.settledAt > cutoff);
    let folded = 0;
    for (const [conversationId, submissions] of groupBy(due)) {
      const log = this.#logs.get(conversationId);
      if (!log) continue;
      const keep = log.records.map((r) => !(isStreamingDelta(r) && r.submissionId !== undefined && submissions.has(r.submissionId)));
      const removed = keep.filter((k) => !k).length;
      if (removed === 0) continue;
      // New arrays: a reader holding a slice of the old ones keeps what it read.
      log.records = log.records.filter((_, i) => keep[i]);
      log.ids = log.ids.filter((_, i) => keep[i]);
      folded += removed;
    }
    return folded;
  }

  readCheckpoint(conversationId: string): LogCheckpoint | undefined {
    const stored = this.#checkpoints.get(conversationId);
    return stored && { at: stored.at, path: [...stored.path], open: [...stored.open] };
  }

  /** Keeps the newer of the stored and the given checkpoint. */
  writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): void {
    const stored = this.#checkpoints.get(conversationId);
    if (stored === undefined || stored.at < checkpoint.at) this.#checkpoints.set(conversationId, frozenCopy(checkpoint));
  }

}

function groupBy(due: readonly Unfolded[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const u of due) {
    const set = out.get(u.conversationId) ?? new Set<string>();
    set.add(u.submissionId);
    out.set(u.conversationId, set);
  }
  return out;
}

function frozenRecord(id: string, draft: RecordDraft): ConversationRecord {
  return frozenCopy({ id, ...draft }) as ConversationRecord;
}

/** Index of the first id strictly greater than `afterId` in the sorted `ids`. */
function firstAfter(ids: readonly string[], afterId: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! <= afterId) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
