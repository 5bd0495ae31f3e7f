/**
 * The steer / follow-up inbox in the SQLite store: messages wait for the session's run in
 * flight, and a drain turns them into `user_message` records in the same transaction.
 */
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost, NoRunInFlight } from "../errors.ts";
import type { InboxDrain } from "../store/store.ts";
import { type InboxKind, type InboxMessage, type SessionKey, isRunInFlight, sessionKeyString } from "../store/submission.ts";
import type { SqliteDatabase } from "./database.ts";
import { sessionKeyColumn, submissionFromRow } from "./submission-row.ts";

export class SqliteInbox {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    return this.#db.write(() => {
      const row = this.#db.sql.headOfSession.get(sessionKeyColumn(key));
      const head = row ? submissionFromRow(row) : undefined;
      if (!head || !isRunInFlight(head)) throw new NoRunInFlight(sessionKeyString(key));
      this.#db.sql.insertInbox.run(head.id, message.kind, message.body, this.#db.clock.now(), message.principalId ?? null);
      return { submissionId: head.id };
    });
  }

  async drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    return this.#db.write(() => {
      const sub = this.#db.mustHoldRunning(request.submissionId, request.attemptId);
      const head = this.#db.head(sub.conversationId);
      if (request.expectedHead !== undefined && request.expectedHead !== head) {
        throw new ClaimLost(`conversation ${sub.conversationId} head moved`);
      }
      const pending = this.#db.sql.pendingInbox
        .all(sub.id)
        .filter((m) => request.kinds.includes(m.kind as InboxKind));
      if (pending.length === 0) return [];
      const time = new Date(this.#db.clock.now()).toISOString();
      const drafts: RecordDraft[] = pending.map((m) => ({
        kind: "user_message",
        conversationId: sub.conversationId,
        session: sub.sessionKey.session,
        submissionId: sub.id,
        attemptId: request.attemptId,
        time,
        payload: {
          body: m.body as string,
          origin: m.kind as InboxKind,
          ...(typeof m.principal_id === "string" ? { principalId: m.principal_id } : {}),
        },
      }));
      const records = this.#db.insertRecords(sub.conversationId, head, drafts);
      pending.forEach((m, i) => this.#db.sql.markDelivered.run(records[i]!.id, m.seq as number));
      return records;
    });
  }
}
