import type { DatabaseSync } from "node:sqlite";
import { UnsupportedSchema } from "../errors.ts";

/**
 * Schema v1. Times are epoch ms; JSON columns hold what the contract types say. Every list the
 * engine runs on a hot path has an index, so none of them scans a whole table:
 * - `submissions.seq` is admission order (rowid, never reused: nothing is deleted).
 * - `session_key` is the JSON array `[agent, instance, session]` (no separator can collide).
 * - `sub_unsettled` (partial) finds a session's head: its oldest submission not yet settled.
 * - `sub_lease` / `sub_wait` are partial, so only rows in that status carry (and rewrite) them
 *   (v9 replaces `sub_wait` with `sub_wait_check`).
 * - `records` is clustered by `(conversation_id, id)`: head lookup and `id > afterId` reads are
 *   range scans; the id primary key also rejects a duplicate record id.
 * - `inbox.delivered_record_id` is the `user_message` record a message became (NULL = pending).
 */
const V1 = `
CREATE TABLE submissions (
  seq                  INTEGER PRIMARY KEY,
  id                   TEXT    NOT NULL UNIQUE,
  conversation_id      TEXT    NOT NULL,
  session_key          TEXT    NOT NULL,
  status               TEXT    NOT NULL,
  input                TEXT    NOT NULL,
  attempt_count        INTEGER NOT NULL,
  attempt_id           TEXT,
  owner_id             TEXT,
  lease_expires_at     INTEGER,
  last_error           TEXT,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  parent_submission_id TEXT,
  parent_call_id       TEXT,
  depth                INTEGER NOT NULL,
  pending_resume       INTEGER NOT NULL,
  wait_until           INTEGER,
  cancel_requested     INTEGER NOT NULL
);
CREATE INDEX sub_status    ON submissions (status, seq);
CREATE INDEX sub_lease     ON submissions (lease_expires_at) WHERE status = 'running';
CREATE INDEX sub_wait      ON submissions (wait_until) WHERE status = 'waiting' AND wait_until IS NOT NULL;
CREATE INDEX sub_unsettled ON submissions (session_key, seq) WHERE status <> 'settled';
CREATE INDEX sub_children  ON submissions (parent_submission_id, seq) WHERE parent_submission_id IS NOT NULL;

CREATE TABLE attempts (
  seq           INTEGER PRIMARY KEY,
  id            TEXT    NOT NULL UNIQUE,
  submission_id TEXT    NOT NULL,
  owner_id      TEXT    NOT NULL,
  started_at    INTEGER NOT NULL
);
CREATE INDEX attempts_by_submission ON attempts (submission_id, seq);

CREATE TABLE conversations (
  id          TEXT    PRIMARY KEY,
  session_key TEXT    NOT NULL UNIQUE,
  created_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE records (
  conversation_id TEXT NOT NULL,
  id              TEXT NOT NULL,
  kind            TEXT NOT NULL,
  record          TEXT NOT NULL,
  PRIMARY KEY (conversation_id, id)
) WITHOUT ROWID;

CREATE TABLE attachments (
  digest     TEXT    PRIMARY KEY,
  media_type TEXT    NOT NULL,
  size       INTEGER NOT NULL,
  data       BLOB    NOT NULL
);

CREATE TABLE inbox (
  seq                 INTEGER PRIMARY KEY,
  submission_id       TEXT    NOT NULL,
  kind                TEXT    NOT NULL,
  body                TEXT    NOT NULL,
  accepted_at         INTEGER NOT NULL,
  delivered_record_id TEXT
);
CREATE INDEX inbox_pending ON inbox (submission_id, seq) WHERE delivered_record_id IS NULL;
`;

/**
 * v2: finds a submission's `submission_settled` record in its conversation, so an append can
 * refuse a second one (`appendRecords`) without reading the log.
 */
const V2 = `
CREATE INDEX records_settled ON records (conversation_id, json_extract(record, '$.submissionId'))
  WHERE kind = 'submission_settled';
`;

/** v3: the settlement's payload on the settled row (`finalizeSettlement`'s outcome), as JSON. */
const V3 = `ALTER TABLE submissions ADD COLUMN outcome TEXT;`;

/**
 * v4: the `task` call ids a waiting parent still waits for (JSON array; NULL when not waiting on
 * children). A child's delivery removes its call under the write lock; the last one requeues.
 */
const V4 = `ALTER TABLE submissions ADD COLUMN pending_calls TEXT;`;

/** v5: the time before which no attempt may start (a release under provider backpressure). */
const V5 = `ALTER TABLE submissions ADD COLUMN not_before INTEGER;`;

/**
 * v6: a session's submissions in admission order, settled ones included (the operator's listing,
 * `listSessionSubmissions`, pages through it newest first).
 */
const V6 = `CREATE INDEX sub_session ON submissions (session_key, seq);`;

/** v7: the cancellation a cancel asked for (`Submission.cancellation`), as JSON. */
const V7 = `ALTER TABLE submissions ADD COLUMN cancellation TEXT;`;

/**
 * v8: each conversation's newest log checkpoint (ADR 0018), its JSON in `body`; `at` is the last
 * record it covers, and a write keeps the row with the larger one.
 */
const V8 = `
CREATE TABLE checkpoints (
  conversation_id TEXT NOT NULL PRIMARY KEY,
  at              TEXT NOT NULL,
  body            TEXT NOT NULL
) WITHOUT ROWID;
`;

/**
 * v9: the wait check (ADR 0021). `wait_check_at` is when the sweep next checks a waiting row
 * (the earlier of its deadline and the lost-wake backstop's next look); the sweep reads only the
 * due rows through `sub_wait_check`, which replaces `sub_wait` (a deadline is never before its
 * check, so expired waits are due ones). Rows waiting when the file is migrated are due at once.
 */
const V9 = `
ALTER TABLE submissions ADD COLUMN wait_check_at INTEGER;
UPDATE submissions SET wait_check_at = MIN(updated_at, COALESCE(wait_until, updated_at)) WHERE status = 'waiting';
DROP INDEX sub_wait;
CREATE INDEX sub_wait_check ON submissions (wait_check_at) WHERE status = 'waiting';
`;

/**
 * v10: durable waits (ADR 0025). `waiting_for` is what a waiting row waits for (JSON), and
 * `delayed_until` marks a delayed message outside its session's order (the head queries skip
 * it). `call_waits` holds the call waits the `approval_requested` / `callback_started` records
 * register (their JSON in `body`) and each one's first answer; a callback is found by its digest.
 */
const V10 = `
ALTER TABLE submissions ADD COLUMN waiting_for TEXT;
ALTER TABLE submissions ADD COLUMN delayed_until INTEGER;
CREATE TABLE call_waits (
  submission_id   TEXT NOT NULL,
  call_id         TEXT NOT NULL,
  body            TEXT NOT NULL,
  callback_digest TEXT,
  answer          TEXT,
  PRIMARY KEY (submission_id, call_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX call_waits_by_digest ON call_waits (callback_digest) WHERE callback_digest IS NOT NULL;
`;

/**
 * v11: lean history (ADR 0034). `deltas_folded` marks a settled row whose streaming delta
 * records have been removed; `sub_fold` lists the settled rows not folded yet by settlement time,
 * so the sweep reads only the due ones. Rows settled before the migration fold at its first sweeps.
 */
const V11 = `
ALTER TABLE submissions ADD COLUMN deltas_folded INTEGER;
CREATE INDEX sub_fold ON submissions (updated_at) WHERE status = 'settled' AND deltas_folded IS NULL;
`;

/**
 * v12: a conversation being deleted (`reserveDeletion`, ADR 0041): while `deleting` is set,
 * admission to its session is refused, so a deletion of a session with its subagents' sessions
 * marks the whole tree before deleting any of it.
 */
const V12 = `ALTER TABLE conversations ADD COLUMN deleting INTEGER;`;

/**
 * v13 (issue 34): who sent a steer or follow-up (`inbox.principal_id`, put on the `user_message`
 * record it becomes); who uploaded an attachment (`attachment_uploaders`, ADR 0046: one row per
 * uploader beside the bytes, stored once).
 */
const V13 = `
ALTER TABLE inbox ADD COLUMN principal_id TEXT;
CREATE TABLE attachment_uploaders (
  digest   TEXT NOT NULL,
  uploader TEXT NOT NULL,
  PRIMARY KEY (digest, uploader)
) WITHOUT ROWID;
`;

/** v14: why the last release handed a submission back for another try (ADR 0053), as JSON. */
const V14 = `ALTER TABLE submissions ADD COLUMN retry TEXT;`;

/**
 * v15: the console's listing across agents and instances (`listActivity`, ADR 0054): every
 * submission by its latest activity, read newest first from a cursor (`updated_at`, `id`).
 */
const V15 = `CREATE INDEX sub_activity ON submissions (updated_at, id);`;

/**
 * Forward migrations: `MIGRATIONS[i]` takes a file from `user_version` i to i + 1. Append new
 * ones; never edit a released one (files in the field were written by it).
 */
const MIGRATIONS: readonly ((db: DatabaseSync) => void)[] = [
  (db) => db.exec(V1),
  (db) => db.exec(V2),
  (db) => db.exec(V3),
  (db) => db.exec(V4),
  (db) => db.exec(V5),
  (db) => db.exec(V6),
  (db) => db.exec(V7),
  (db) => db.exec(V8),
  (db) => db.exec(V9),
  (db) => db.exec(V10),
  (db) => db.exec(V11),
  (db) => db.exec(V12),
  (db) => db.exec(V13),
  (db) => db.exec(V14),
  (db) => db.exec(V15),
];

/** The schema version this code writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = MIGRATIONS.length;

function userVersion(db: DatabaseSync): number {
  return Number(db.prepare("PRAGMA user_version").get()?.user_version ?? 0);
}

/** Refuses a file written by a newer schema, before anything touches it. */
export function assertSchemaReadable(db: DatabaseSync, location: string): void {
  const version = userVersion(db);
  if (version > SCHEMA_VERSION) {
    throw new UnsupportedSchema(
      `${location} has schema version ${version}; this version of resolute-harness reads up to ${SCHEMA_VERSION}`,
    );
  }
}

/**
 * Brings the file to `SCHEMA_VERSION` in one write transaction. The version is read again under
 * the write lock, so two processes opening a fresh file at once migrate it exactly once.
 */
export function migrate(db: DatabaseSync, location: string): void {
  if (userVersion(db) === SCHEMA_VERSION) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    assertSchemaReadable(db, location);
    for (let v = userVersion(db); v < SCHEMA_VERSION; v++) MIGRATIONS[v]!(db);
    // PRAGMA takes no bound parameters; the value is our own integer constant.
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    db.exec("COMMIT");
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}
