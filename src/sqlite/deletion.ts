/**
 * Deleting a session's conversation in the SQLite store (ADR 0034): one write transaction removes
 * its records, checkpoint, submissions with their attempts, inbox messages and call waits, the conversation
 * row, and the attachments no other conversation or submission references. A process killed
 * midway rolls the transaction back: the next call starts from the same state and completes it.
 */
import type { StatementSync } from "node:sqlite";
import { attachmentDigests, inputDigests } from "../conversation/attachment-digests.ts";
import type { DispatchMessage } from "../protocol/dispatch.ts";
import type { ConversationRecord } from "../protocol/records.ts";
import { SessionBusy } from "../errors.ts";
import type { ConversationDeletion } from "../store/store.ts";
import { type SessionKey, sessionKeyString } from "../store/submission.ts";
import type { SqliteDatabase } from "./database.ts";
import { sessionKeyColumn } from "./submission-row.ts";

/**
 * The statements of a deletion. The reference checks read every other `user_message` record and
 * every submission input (`instr`, no index): a deletion is rare and an embedded file small, and
 * the check errs towards keeping a blob (any mention of the digest keeps it).
 */
const SQL = {
  unsettled: "SELECT 1 FROM submissions WHERE session_key = ? AND status <> 'settled' LIMIT 1",
  conversation: "SELECT id, deleting FROM conversations WHERE session_key = ?",
  markDeleting: "UPDATE conversations SET deleting = 1 WHERE id = ?",
  clearDeleting: "UPDATE conversations SET deleting = NULL WHERE session_key = ?",
  userRecords: "SELECT record FROM records WHERE conversation_id = ? AND kind = 'user_message'",
  inputs: "SELECT id, input FROM submissions WHERE session_key = ?",
  deleteAttempts: "DELETE FROM attempts WHERE submission_id = ?",
  deleteInbox: "DELETE FROM inbox WHERE submission_id = ?",
  deleteCallWaits: "DELETE FROM call_waits WHERE submission_id = ?",
  deleteSubmissions: "DELETE FROM submissions WHERE session_key = ?",
  deleteRecords: "DELETE FROM records WHERE conversation_id = ?",
  deleteCheckpoint: "DELETE FROM checkpoints WHERE conversation_id = ?",
  deleteConversation: "DELETE FROM conversations WHERE id = ?",
  recordMentions: "SELECT 1 FROM records WHERE kind = 'user_message' AND instr(record, ?) > 0 LIMIT 1",
  inputMentions: "SELECT 1 FROM submissions WHERE instr(input, ?) > 0 LIMIT 1",
  deleteAttachment: "DELETE FROM attachments WHERE digest = ?",
} as const;

export class SqliteDeletion {
  readonly #db: SqliteDatabase;
  #prepared: Record<keyof typeof SQL, StatementSync> | undefined;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async reserveDeletion(key: SessionKey): Promise<boolean> {
    return this.#db.write(() => {
      const sql = this.#sql();
      const column = sessionKeyColumn(key);
      if (sql.unsettled.get(column)) throw new SessionBusy(sessionKeyString(key));
      const row = sql.conversation.get(column);
      if (!row || row.deleting !== null) return false;
      sql.markDeleting.run(row.id as string);
      return true;
    });
  }

  async releaseDeletion(key: SessionKey): Promise<void> {
    await this.#db.write(() => {
      this.#sql().clearDeleting.run(sessionKeyColumn(key));
    });
  }

  async deleteConversation(key: SessionKey): Promise<ConversationDeletion> {
    return this.#db.write(() => {
      const sql = this.#sql();
      const column = sessionKeyColumn(key);
      if (sql.unsettled.get(column)) throw new SessionBusy(sessionKeyString(key));
      const row = sql.conversation.get(column);
      if (!row) return { deleted: false, blobsDeleted: [] };
      const conversationId = row.id as string;
      const records = sql.userRecords.all(conversationId).map((r) => JSON.parse(r.record as string) as ConversationRecord);
      const digests = attachmentDigests(records);
      for (const sub of sql.inputs.all(column)) {
        inputDigests(JSON.parse(sub.input as string) as DispatchMessage, digests);
        sql.deleteAttempts.run(sub.id as string);
        sql.deleteInbox.run(sub.id as string);
        sql.deleteCallWaits.run(sub.id as string);
      }
      sql.deleteSubmissions.run(column);
      sql.deleteRecords.run(conversationId);
      sql.deleteCheckpoint.run(conversationId);
      sql.deleteConversation.run(conversationId);
      const blobsDeleted = [...digests].filter((d) => !sql.recordMentions.get(d) && !sql.inputMentions.get(d));
      for (const digest of blobsDeleted) sql.deleteAttachment.run(digest);
      return { deleted: true, conversationId, blobsDeleted };
    });
  }

  #sql(): Record<keyof typeof SQL, StatementSync> {
    this.#prepared ??= Object.fromEntries(
      Object.entries(SQL).map(([name, text]) => [name, this.#db.db.prepare(text)]),
    ) as Record<keyof typeof SQL, StatementSync>;
    return this.#prepared;
  }
}
