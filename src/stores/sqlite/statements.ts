import type { DatabaseSync, StatementSync } from "node:sqlite";
import { SUBMISSION_SET_COLUMNS } from "./submission-row.ts";

/** A session's head: its oldest submission that is not settled (uses `sub_unsettled`). */
const HEAD_OF_SESSION = `SELECT * FROM submissions WHERE session_key = ? AND status <> 'settled' ORDER BY seq LIMIT 1`;

/**
 * Every statement the store runs, prepared once when the store opens: no operation parses
 * SQL or touches the schema on the hot path.
 */
export function prepareStatements(db: DatabaseSync) {
  const p = (sql: string): StatementSync => db.prepare(sql);
  return {
    begin: p("BEGIN IMMEDIATE"),
    commit: p("COMMIT"),
    rollback: p("ROLLBACK"),

    getSubmission: p("SELECT * FROM submissions WHERE id = ?"),
    insertSubmission: p(
      `INSERT INTO submissions (id, conversation_id, session_key, input, created_at, parent_submission_id,
         parent_call_id, depth, ${SUBMISSION_SET_COLUMNS.join(", ")})
       VALUES (${Array(8 + SUBMISSION_SET_COLUMNS.length).fill("?").join(", ")})`,
    ),
    updateSubmission: p(
      `UPDATE submissions SET ${SUBMISSION_SET_COLUMNS.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`,
    ),
    headOfSession: p(HEAD_OF_SESSION),
    listRunnable: p(
      `SELECT s.* FROM submissions s
       WHERE s.status = 'queued'
         AND s.seq = (SELECT u.seq FROM submissions u
                      WHERE u.session_key = s.session_key AND u.status <> 'settled'
                      ORDER BY u.seq LIMIT 1)
       ORDER BY s.seq`,
    ),
    listByStatus: p("SELECT * FROM submissions WHERE status = ? ORDER BY seq"),
    listExpiredLeases: p(
      "SELECT * FROM submissions WHERE status = 'running' AND lease_expires_at <= ? ORDER BY seq",
    ),
    listExpiredWaits: p(
      "SELECT * FROM submissions WHERE status = 'waiting' AND wait_until IS NOT NULL AND wait_until < ? ORDER BY seq",
    ),
    listChildren: p("SELECT * FROM submissions WHERE parent_submission_id = ? ORDER BY seq"),

    insertAttempt: p(
      `INSERT INTO attempts (id, submission_id, owner_id, started_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO NOTHING`,
    ),
    listAttempts: p("SELECT * FROM attempts WHERE submission_id = ? ORDER BY seq"),

    insertConversation: p(
      `INSERT INTO conversations (id, session_key, created_at) VALUES (?, ?, ?)
       ON CONFLICT (session_key) DO NOTHING`,
    ),
    getConversationByKey: p("SELECT * FROM conversations WHERE session_key = ?"),
    conversationExists: p("SELECT 1 AS present FROM conversations WHERE id = ?"),

    head: p("SELECT id FROM records WHERE conversation_id = ? ORDER BY id DESC LIMIT 1"),
    insertRecord: p("INSERT INTO records (conversation_id, id, kind, record) VALUES (?, ?, ?, ?)"),
    // LIMIT -1 = no limit.
    readRecords: p("SELECT record FROM records WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?"),

    insertAttachment: p(
      `INSERT INTO attachments (digest, media_type, size, data) VALUES (?, ?, ?, ?)
       ON CONFLICT (digest) DO NOTHING`,
    ),
    getAttachment: p("SELECT * FROM attachments WHERE digest = ?"),
    attachmentRef: p("SELECT digest, media_type, size FROM attachments WHERE digest = ?"),

    insertInbox: p("INSERT INTO inbox (submission_id, kind, body, accepted_at) VALUES (?, ?, ?, ?)"),
    pendingInbox: p(
      "SELECT seq, kind, body FROM inbox WHERE submission_id = ? AND delivered_record_id IS NULL ORDER BY seq",
    ),
    hasPendingInbox: p(
      "SELECT 1 AS present FROM inbox WHERE submission_id = ? AND delivered_record_id IS NULL LIMIT 1",
    ),
    markDelivered: p("UPDATE inbox SET delivered_record_id = ? WHERE seq = ?"),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
