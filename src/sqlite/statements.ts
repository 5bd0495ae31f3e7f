import type { DatabaseSync, StatementSync } from "node:sqlite";
import { SUBMISSION_SET_COLUMNS } from "./submission-row.ts";

const INSERT_COLUMNS = [
  "id",
  "conversation_id",
  "session_key",
  "input",
  "created_at",
  "parent_submission_id",
  "parent_call_id",
  "depth",
  ...SUBMISSION_SET_COLUMNS,
];

/** The SQL of every statement the store runs (exported for the query-plan test). */
export const SQL = {
  begin: "BEGIN IMMEDIATE",
  commit: "COMMIT",
  rollback: "ROLLBACK",
  /** One write of a group commit (`group-commit.ts`). */
  savepoint: "SAVEPOINT write",
  release: "RELEASE write",
  rollbackToSavepoint: "ROLLBACK TO write",

  getSubmission: "SELECT * FROM submissions WHERE id = ?",
  /** The fence's columns only: a fenced append checks them without reading the whole row. */
  fenceOfSubmission: "SELECT status, attempt_id, cancel_requested, cancellation FROM submissions WHERE id = ?",
  insertSubmission: `INSERT INTO submissions (${INSERT_COLUMNS.join(", ")})
    VALUES (${INSERT_COLUMNS.map(() => "?").join(", ")})`,
  updateSubmission: `UPDATE submissions SET ${SUBMISSION_SET_COLUMNS.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`,
  /**
   * A session's head: its oldest submission that is not settled (uses `sub_unsettled`); a
   * delayed message outside the order is none.
   */
  headOfSession: `SELECT * FROM submissions
    WHERE session_key = ? AND status <> 'settled' AND delayed_until IS NULL ORDER BY seq LIMIT 1`,
  /** The status of a session's head (what `sessionLive` needs, without the row's other columns). */
  headStatusOfSession: `SELECT status FROM submissions
    WHERE session_key = ? AND status <> 'settled' AND delayed_until IS NULL ORDER BY seq LIMIT 1`,
  listRunnable: `SELECT s.* FROM submissions s
    WHERE s.status = 'queued'
      AND s.seq = (SELECT u.seq FROM submissions u
                   WHERE u.session_key = s.session_key AND u.status <> 'settled' AND u.delayed_until IS NULL
                   ORDER BY u.seq LIMIT 1)
    ORDER BY s.seq`,
  /**
   * A delayed message joins its session's order (?1 now, ?2 id): the newest admission (a new
   * `seq`, the rowid: nothing refers to it), queued, its wait cleared.
   */
  joinSessionOrder: `UPDATE submissions SET seq = (SELECT MAX(seq) FROM submissions) + 1, status = 'queued',
    updated_at = ?1, delayed_until = NULL, waiting_for = NULL, wait_check_at = NULL, wait_until = NULL
    WHERE id = ?2 AND status = 'waiting' AND delayed_until IS NOT NULL`,
  listByStatus: "SELECT * FROM submissions WHERE status = ? ORDER BY seq",
  // INDEXED BY: without ANALYZE statistics the planner may prefer `sub_status` (it yields seq
  // order), which walks every running / waiting row instead of only the expired ones.
  listExpiredLeases: `SELECT * FROM submissions INDEXED BY sub_lease
    WHERE status = 'running' AND lease_expires_at <= ? ORDER BY seq`,
  listDueWaits: `SELECT * FROM submissions INDEXED BY sub_wait_check
    WHERE status = 'waiting' AND wait_check_at <= ? ORDER BY seq`,
  /** ?1 next check (clamped to the deadline), ?2 id, ?3 the check found due (uses the key). */
  postponeWaitCheck: `UPDATE submissions SET wait_check_at = MIN(?1, COALESCE(wait_until, ?1))
    WHERE id = ?2 AND status = 'waiting' AND wait_check_at = ?3`,
  /** One page of a session's submissions, newest first, before `seq` ?2 (uses `sub_session`). */
  listSessionSubmissions: `SELECT * FROM submissions INDEXED BY sub_session
    WHERE session_key = ?1 AND seq < ?2 AND (?3 IS NULL OR status = ?3) ORDER BY seq DESC LIMIT ?4`,
  /**
   * A chunk of the activity listing (ADR 0054), newest activity first, before the cursor
   * (?1 updated_at, ?2 id), ?3 an agent or NULL, ?4 since (inclusive), ?5 until (exclusive), at
   * most ?6 rows (uses `sub_activity`; the states are filtered by the caller).
   */
  listActivity: `SELECT * FROM submissions INDEXED BY sub_activity
    WHERE (updated_at, id) < (?1, ?2) AND updated_at >= ?4 AND updated_at < ?5
      AND (?3 IS NULL OR json_extract(session_key, '$[0]') = ?3)
    ORDER BY updated_at DESC, id DESC LIMIT ?6`,
  /** The admission position of a submission of this session (the listing's cursor). */
  sessionSubmissionSeq: "SELECT seq FROM submissions WHERE id = ? AND session_key = ?",
  listChildren: "SELECT * FROM submissions WHERE parent_submission_id = ? ORDER BY seq",

  insertAttempt: `INSERT INTO attempts (id, submission_id, owner_id, started_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (id) DO NOTHING`,
  listAttempts: "SELECT * FROM attempts WHERE submission_id = ? ORDER BY seq",

  insertConversation: `INSERT INTO conversations (id, session_key, created_at) VALUES (?, ?, ?)
    ON CONFLICT (session_key) DO NOTHING`,
  getConversationByKey: "SELECT * FROM conversations WHERE session_key = ?",
  // ?1 after, ?2 the id floor of idleSince, ?3 idleSince, ?4 limit; the newest record by the primary key.
  idleConversations: `SELECT c.* FROM conversations c
    WHERE c.id > ?1 AND COALESCE((SELECT max(r.id) FROM records r WHERE r.conversation_id = c.id) < ?2, c.created_at < ?3)
    ORDER BY c.id LIMIT ?4`,
  /** `known` = the conversation exists; `head` = its last record id (NULL when empty). */
  appendHead: `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?1) AS known,
    (SELECT id FROM records WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1) AS head`,
  head: "SELECT id FROM records WHERE conversation_id = ? ORDER BY id DESC LIMIT 1",
  /** Whether the log holds the submission's settlement record (uses `records_settled`). */
  hasSettledRecord: `SELECT 1 AS found FROM records WHERE conversation_id = ? AND kind = 'submission_settled'
    AND json_extract(record, '$.submissionId') = ? LIMIT 1`,
  insertRecord: "INSERT INTO records (conversation_id, id, kind, record) VALUES (?, ?, ?, ?)",
  /** LIMIT -1 = no limit. */
  readRecords: "SELECT record FROM records WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?",

  readCheckpoint: "SELECT body FROM checkpoints WHERE conversation_id = ?",
  /** Keeps the newer of the stored and the given checkpoint. */
  writeCheckpoint: `INSERT INTO checkpoints (conversation_id, at, body) VALUES (?, ?, ?)
    ON CONFLICT (conversation_id) DO UPDATE SET at = excluded.at, body = excluded.body WHERE excluded.at > checkpoints.at`,

  /** Registers a call wait; one registered already for the call stays. */
  insertCallWait: `INSERT INTO call_waits (submission_id, call_id, body, callback_digest) VALUES (?, ?, ?, ?)
    ON CONFLICT DO NOTHING`,
  getCallWait: "SELECT body, answer FROM call_waits WHERE submission_id = ? AND call_id = ?",
  findCallback: "SELECT body, answer FROM call_waits WHERE callback_digest = ?",
  answerCallWait: "UPDATE call_waits SET answer = ?3 WHERE submission_id = ?1 AND call_id = ?2 AND answer IS NULL",

  insertAttachment: `INSERT INTO attachments (digest, media_type, size, data) VALUES (?, ?, ?, ?)
    ON CONFLICT (digest) DO NOTHING`,
  getAttachment: "SELECT * FROM attachments WHERE digest = ?",
  attachmentRef: "SELECT digest, media_type, size FROM attachments WHERE digest = ?",
  insertAttachmentUploader: "INSERT OR IGNORE INTO attachment_uploaders (digest, uploader) VALUES (?, ?)",
  isAttachmentUploader: "SELECT 1 AS present FROM attachment_uploaders WHERE digest = ? AND uploader = ?",

  insertInbox: "INSERT INTO inbox (submission_id, kind, body, accepted_at, principal_id) VALUES (?, ?, ?, ?, ?)",
  pendingInbox: `SELECT seq, kind, body, principal_id FROM inbox
    WHERE submission_id = ? AND delivered_record_id IS NULL ORDER BY seq`,
  hasPendingInbox: `SELECT 1 AS present FROM inbox
    WHERE submission_id = ? AND delivered_record_id IS NULL LIMIT 1`,
  markDelivered: "UPDATE inbox SET delivered_record_id = ? WHERE seq = ?",

  /** Settled rows whose deltas are still in the log, settled at or before `?1` (lean history). */
  dueFolds: `SELECT id, conversation_id, created_at, json_extract(input, '$.notBefore') AS not_before FROM submissions
    WHERE status = 'settled' AND deltas_folded IS NULL AND updated_at <= ?1 ORDER BY updated_at LIMIT ?2`,
  /** A submission's deltas, from its conversation's records after an id floor below its first record. */
  deleteDeltas: `DELETE FROM records WHERE conversation_id = ?1 AND id > ?2
    AND kind IN ('assistant_text_delta', 'assistant_thinking_delta') AND json_extract(record, '$.submissionId') = ?3`,
  markFolded: "UPDATE submissions SET deltas_folded = 1 WHERE id = ?",
} as const;

export type Statements = { readonly [K in keyof typeof SQL]: StatementSync };

/**
 * Prepares every statement once, when the store opens: no operation parses SQL or touches the
 * schema on the hot path.
 */
export function prepareStatements(db: DatabaseSync): Statements {
  return Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Statements;
}
