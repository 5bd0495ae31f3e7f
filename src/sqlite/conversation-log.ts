/**
 * Conversations and their record logs in the SQLite store: the conversation of a session key,
 * appends checked against the record head and the fence under the write lock, and reads.
 */
import type { LogCheckpoint } from "../conversation/checkpoint.ts";
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost, ConversationNotFound } from "../errors.ts";
import type { AppendOptions, IdleConversationQuery } from "../store/store.ts";
import { idFloor } from "../conversation/ids.ts";
import { type Conversation, joinedOrderAt, type SessionKey, sessionKeyString } from "../store/submission.ts";
import type { SqliteDatabase } from "./database.ts";
import { sessionKeyColumn, sessionKeyFromColumn } from "./submission-row.ts";

/** Settled submissions folded per write transaction: bounds how long one sweep holds the write lock. */
const FOLDS_PER_WRITE = 50;
/** A submission's records are minted after it joins its session's order, less this much clock skew between processes. */
const ADMISSION_SKEW_MS = 5 * 60_000;

export class SqliteConversationLog {
  readonly #db: SqliteDatabase;
  readonly #deltaRetentionMs: number;

  constructor(db: SqliteDatabase, deltaRetentionMs: number) {
    this.#db = db;
    this.#deltaRetentionMs = deltaRetentionMs;
  }

  /**
   * Deletes the deltas of submissions settled at least the retention ago (ADR 0034), a few
   * submissions per write transaction, each marked folded in the same transaction.
   */
  async foldDeltas(): Promise<number> {
    if (!Number.isFinite(this.#deltaRetentionMs)) return 0;
    let folded = 0;
    for (;;) {
      const { rows, deleted } = await this.#db.write(() => {
        const due = this.#db.sql.dueFolds.all(this.#db.clock.now() - this.#deltaRetentionMs, FOLDS_PER_WRITE);
        let count = 0;
        for (const row of due) {
          // From when it joined its session's order: a delayed message's wait is not its range.
          const floor = idFloor(Math.max(0, joinedOrderAt(row.created_at as number, row.not_before as string | null) - ADMISSION_SKEW_MS));
          count += Number(this.#db.sql.deleteDeltas.run(row.conversation_id as string, floor, row.id as string).changes);
          this.#db.sql.markFolded.run(row.id as string);
        }
        return { rows: due.length, deleted: count };
      });
      folded += deleted;
      if (rows < FOLDS_PER_WRITE) return folded;
    }
  }

  async ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#db.write(() => {
      const key = sessionKeyColumn(candidate.key);
      const { changes } = this.#db.sql.insertConversation.run(candidate.id, key, candidate.createdAt);
      return { conversation: this.#conversationByKey(key)!, created: changes === 1 };
    });
  }

  async listIdleConversations(query: IdleConversationQuery): Promise<Conversation[]> {
    const rows = this.#db.sql.idleConversations.all(query.after ?? "", idFloor(query.idleSince), query.idleSince, query.limit);
    return rows.map((row) => ({ id: row.id as string, key: sessionKeyFromColumn(row.session_key as string), createdAt: row.created_at as number }));
  }

  async getConversation(key: SessionKey): Promise<Conversation> {
    const conversation = this.#conversationByKey(sessionKeyColumn(key));
    if (!conversation) throw new ConversationNotFound(sessionKeyString(key));
    return conversation;
  }

  async appendRecords(
    conversationId: string,
    drafts: RecordDraft[],
    options?: AppendOptions,
  ): Promise<ConversationRecord[]> {
    return this.#db.write(() => {
      const row = this.#db.sql.appendHead.get(conversationId)!;
      // A copy is written before its conversation is given to its session (`copied`, store.ts).
      if (row.known !== 1 && options?.copied !== true) throw new ConversationNotFound(conversationId);
      const head = (row.head as string | null) ?? "";
      if (options?.expectedHead !== undefined && options.expectedHead !== head) {
        throw new ClaimLost(`conversation ${conversationId} head is ${head || "empty"}, not ${options.expectedHead || "empty"}`);
      }
      if (options?.fence) this.#db.mustHoldRunningFence(options.fence.submissionId, options.fence.attemptId, options.fence.onCancel);
      return this.#db.insertRecords(conversationId, head, drafts, { registerCallWaits: !options?.copied });
    });
  }

  async readRecords(conversationId: string, afterId = "", limit?: number): Promise<ConversationRecord[]> {
    const max = limit === undefined ? -1 : Math.max(0, Math.floor(limit));
    return this.#db.sql.readRecords
      .all(conversationId, afterId, max)
      .map((row) => JSON.parse(row.record as string) as ConversationRecord);
  }

  async readCheckpoint(conversationId: string): Promise<LogCheckpoint | undefined> {
    const row = this.#db.sql.readCheckpoint.get(conversationId);
    return row ? (JSON.parse(row.body as string) as LogCheckpoint) : undefined;
  }

  async writeCheckpoint(conversationId: string, checkpoint: LogCheckpoint): Promise<void> {
    const body = JSON.stringify(checkpoint);
    await this.#db.write(() => {
      this.#db.sql.writeCheckpoint.run(conversationId, checkpoint.at, body);
    });
  }

  #conversationByKey(key: string): Conversation | undefined {
    const row = this.#db.sql.getConversationByKey.get(key);
    if (!row) return undefined;
    return {
      id: row.id as string,
      key: sessionKeyFromColumn(row.session_key as string),
      createdAt: row.created_at as number,
    };
  }
}
