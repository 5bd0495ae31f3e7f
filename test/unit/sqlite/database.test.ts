/**
 * What only a file-backed SQLite store has: persistence across reopen, schema versioning, WAL,
 * lock contention inside one process, and rollback of a batch that fails half way.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import type { RecordDraft } from "../../../src/protocol/records.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import {
  openSqliteStore,
  SCHEMA_VERSION,
  SqliteStoreBusy,
  SqliteStoreOpenFailed,
  type SqliteStore,
} from "../../../src/sqlite/index.ts";
import { SQL } from "../../../src/sqlite/statements.ts";
import { DEFAULT_DELTA_RETENTION_MS } from "../../../src/conversation/delta-folding.ts";

const dir = mkdtempSync(join(tmpdir(), "sqlite-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = () => join(dir, `store-${++files}.db`);

function pragma(path: string, name: string): unknown {
  const db = new DatabaseSync(path);
  try {
    return db.prepare(`PRAGMA ${name}`).get()?.[name];
  } finally {
    db.close();
  }
}

const key = { agent: "agent", instance: "inst", session: "default" };

/** Takes a file back to v8's layout: no `wait_check_at`, the deadline index it replaced. */
/** Takes a file back from version 15 to 14 (the activity listing, ADR 0054). */
const UNDO_V15 = `DROP INDEX sub_activity`;
/** Takes a file back from version 14 to 13 (a release's retry reason, ADR 0053). */
const UNDO_V14 = `${UNDO_V15}; ALTER TABLE submissions DROP COLUMN retry`;
/** Takes a file back from version 13 to 12 (who sent a steer, who uploaded an attachment: issue 34). */
const UNDO_V13 = `${UNDO_V14}; ALTER TABLE inbox DROP COLUMN principal_id; DROP TABLE attachment_uploaders`;
/** Takes a file back from version 12 to 11 (deletion marks, ADR 0041). */
const UNDO_V12 = `${UNDO_V13}; ALTER TABLE conversations DROP COLUMN deleting`;
/** Takes a file back from version 11 to 10 (lean history, ADR 0034). */
const UNDO_V11 = `${UNDO_V12}; DROP INDEX sub_fold; ALTER TABLE submissions DROP COLUMN deltas_folded`;
/** Takes a file back from version 10 to 9 (durable waits, ADR 0025). */
const UNDO_V10 = `${UNDO_V11}; DROP TABLE call_waits; ALTER TABLE submissions DROP COLUMN waiting_for; ALTER TABLE submissions DROP COLUMN delayed_until`;
const UNDO_V9 = `${UNDO_V10}; DROP INDEX sub_wait_check; ALTER TABLE submissions DROP COLUMN wait_check_at;
  CREATE INDEX sub_wait ON submissions (wait_until) WHERE status = 'waiting' AND wait_until IS NOT NULL`;

function delta(conversationId: string, text: string, payload: unknown = { text }): RecordDraft {
  return {
    kind: "assistant_text_delta",
    conversationId,
    session: "default",
    time: "2026-01-01T00:00:00.000Z",
    payload,
  } as RecordDraft;
}

async function seed(store: SqliteStore, clock: ManualClock) {
  const { conversation } = await store.ensureConversation({ id: "conv-1", key, createdAt: clock.now() });
  const sub = (await store.admitSubmission({
    id: "sub-1",
    conversationId: conversation.id,
    sessionKey: key,
    input: { kind: "user", body: "hello", resultSchema: { type: "object" } },
    createdAt: clock.now(),
  })).submission;
  const claimed = await store.claimSubmission({ submissionId: sub.id, attemptId: "att-1", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
  await store.startAttempt({ id: "att-1", submissionId: sub.id, ownerId: "owner", startedAt: clock.now() });
  const records = await store.appendRecords(conversation.id, [delta(conversation.id, "a"), delta(conversation.id, "b")]);
  const ref = await store.putAttachment("text/plain", new TextEncoder().encode("bytes"));
  await store.enqueueInbox(key, { kind: "steer", body: "faster" });
  return { conversation, claimed, records, ref };
}

describe("sqlite store on a file", () => {
  it("keeps everything across close and reopen", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const first = openSqliteStore({ path, clock });
    const { conversation, claimed, records, ref } = await seed(first, clock);
    const before = await first.getSubmission("sub-1");
    await first.close();
    await first.close(); // idempotent

    const reopened = openSqliteStore({ path, clock });
    expect(await reopened.getConversation(key)).toEqual(conversation);
    expect(await reopened.getSubmission("sub-1")).toEqual(before);
    expect(before.attemptId).toBe(claimed.attemptId);
    expect(await reopened.listAttempts("sub-1")).toEqual([{ id: "att-1", submissionId: "sub-1", ownerId: "owner", startedAt: clock.now() }]);
    expect(await reopened.readRecords(conversation.id)).toEqual(records);
    const attachment = await reopened.getAttachment(ref.digest);
    expect(attachment.ref).toEqual(ref);
    expect(new TextDecoder().decode(attachment.data)).toBe("bytes");
    await expect(reopened.reserveSettlement("sub-1", "att-1", { requireDrainedInbox: true })).rejects.toMatchObject({ code: "inbox_not_drained" });
    const drained = await reopened.drainInbox({ submissionId: "sub-1", attemptId: "att-1", kinds: ["steer"] });
    expect(drained.map((r) => r.payload)).toEqual([{ body: "faster", origin: "steer" }]);
    expect(drained[0]!.id > records[1]!.id).toBe(true);
    await reopened.close();
  });

  it("creates the folders of its path, as a relative path from the working directory", async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const store = openSqliteStore({ path: "./harness-data/nested/harness.db" });
      await store.close();
    } finally {
      process.chdir(cwd);
    }
    expect(existsSync(join(dir, "harness-data", "nested", "harness.db"))).toBe(true);
  });

  it("names the path it could not open in a typed error", () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "not a folder");
    const path = join(file, "harness.db");
    let caught: unknown;
    try {
      openSqliteStore({ path });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SqliteStoreOpenFailed);
    const err = caught as SqliteStoreOpenFailed;
    expect(err.code).toBe("sqlite_open_failed");
    expect(err.path).toBe(resolve(path));
    expect(err.message).toContain(resolve(path));
    expect(err.cause).toBeDefined();
  });

  it("names the path when SQLite itself cannot open the file", () => {
    // The folder exists (it is `dir`), but the path is a folder: SQLite's own open fails.
    let caught: unknown;
    try {
      openSqliteStore({ path: dir });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SqliteStoreOpenFailed);
    expect((caught as Error).message).toContain(dir);
    expect((caught as Error).message).toMatch(/unable to open database file/);
  });

  it("creates the file in WAL mode at the current schema version", async () => {
    const path = freshPath();
    const store = openSqliteStore({ path });
    await store.close();
    expect(pragma(path, "journal_mode")).toBe("wal");
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(15);
  });

  it("refuses a file written by a newer schema with UnsupportedSchema and leaves it alone", async () => {
    const path = freshPath();
    await openSqliteStore({ path }).close();
    const db = new DatabaseSync(path);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    db.close();

    expect(() => openSqliteStore({ path })).toThrow(expect.objectContaining({ code: "unsupported_schema", name: "UnsupportedSchema" }));
    expect(() => openSqliteStore({ path })).toThrow(new RegExp(`schema version ${SCHEMA_VERSION + 1};`));
    expect(pragma(path, "user_version"), "the refused file is not rewritten").toBe(SCHEMA_VERSION + 1);
  });

  it("opens a version 7 file (before checkpoints) at version 8: its log intact, checkpoints stored from then on", async () => {
    const path = freshPath();
    const before = openSqliteStore({ path });
    const { conversation } = await before.ensureConversation({ id: "conv-7", key, createdAt: 1 });
    const [first] = await before.appendRecords(conversation.id, [delta(conversation.id, "kept")]);
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`DROP TABLE checkpoints; ${UNDO_V9}; PRAGMA user_version = 7`);
    db.close();

    const store = openSqliteStore({ path });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    expect(await store.readRecords(conversation.id)).toEqual([first]);
    expect(await store.readCheckpoint(conversation.id)).toBeUndefined();
    await store.writeCheckpoint(conversation.id, { at: first!.id, path: [first!], open: [] });
    expect(await store.readCheckpoint(conversation.id)).toEqual({ at: first!.id, path: [first!], open: [] });
    await store.close();
  });

  it("opens a version 8 file (before wait checks) at version 9: a parent waiting in it is due at once, then checked by its index", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    for (const id of ["bounded", "unbounded"]) {
      await before.admitSubmission({ id, conversationId: `conv-${id}`, sessionKey: { ...key, instance: id }, input: { kind: "user", body: id }, createdAt: clock.now() });
      await before.claimSubmission({ submissionId: id, attemptId: `att-${id}`, ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    }
    await before.waitSubmission({ submissionId: "bounded", attemptId: "att-bounded", waitUntil: clock.now() + 60_000, pendingCalls: ["call-1"] });
    await before.waitSubmission({ submissionId: "unbounded", attemptId: "att-unbounded", pendingCalls: ["call-2"] });
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V9}; PRAGMA user_version = 8`);
    db.close();

    await clock.advance(10_000);
    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    const due = await store.listDueWaits(clock.now());
    expect(due.map((s) => s.id), "both rows waiting at the migration are due at once").toEqual(["bounded", "unbounded"]);
    expect(due.map((s) => s.waitCheckAt)).toEqual([due[0]!.updatedAt, due[1]!.updatedAt]);
    expect(due[0]).toMatchObject({ status: "waiting", pendingCalls: ["call-1"], waitUntil: due[0]!.updatedAt + 60_000 });
    expect(await store.postponeWaitCheck({ submissionId: "unbounded", waitCheckAt: due[1]!.waitCheckAt!, nextCheckAt: clock.now() + 5_000 })).toBe(true);
    expect((await store.listDueWaits(clock.now())).map((s) => s.id)).toEqual(["bounded"]);
    await store.close();
  });

  it("opens a version 10 file (before lean history) at version 11: submissions settled in it have their deltas folded after the retention", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    await before.admitSubmission({ id: "old", conversationId: "conv-old", sessionKey: key, input: { kind: "user", body: "o" }, createdAt: clock.now() });
    await before.claimSubmission({ submissionId: "old", attemptId: "att-1", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    const fence = { fence: { submissionId: "old", attemptId: "att-1" } };
    const [streamed] = await before.appendRecords("conv-old", [{ ...delta("conv-old", "x"), submissionId: "old" }], fence);
    const [kept] = await before.appendRecords("conv-old", [{ ...delta("conv-old", ""), kind: "submission_settled", submissionId: "old", payload: { status: "succeeded" } } as RecordDraft], fence);
    await before.reserveSettlement("old", "att-1");
    await before.finalizeSettlement("old");
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V11}; PRAGMA user_version = 10`);
    db.close();

    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    expect(await store.readRecords("conv-old")).toEqual([streamed, kept]);
    await clock.advance(DEFAULT_DELTA_RETENTION_MS);
    expect(await store.foldDeltas()).toBe(1);
    expect(await store.readRecords("conv-old")).toEqual([kept]);
    await store.close();
  });

  it("opens a version 14 file (before the activity listing) at version 15: its submissions are listed by their latest activity", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    await before.admitSubmission({ id: "old", conversationId: "conv-old", sessionKey: key, input: { kind: "user", body: "o" }, createdAt: clock.now() });
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V15}; PRAGMA user_version = 14`);
    db.close();

    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    await clock.advance(1_000);
    await store.admitSubmission({ id: "new", conversationId: "conv-other", sessionKey: { ...key, session: "other" }, input: { kind: "user", body: "n" }, createdAt: clock.now() });
    expect((await store.listActivity({ limit: 10 })).submissions.map((s) => s.id)).toEqual(["new", "old"]);
    await store.close();
  });

  it("opens a version 12 file (before inbox principals and attachment uploaders) at version 15: a steer accepted before drains without one, a steer after keeps its principal; an attachment stored before has no uploader until one is recorded", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    await before.admitSubmission({ id: "run", conversationId: "conv-run", sessionKey: key, input: { kind: "user", body: "r" }, createdAt: clock.now() });
    await before.claimSubmission({ submissionId: "run", attemptId: "att-1", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    await before.enqueueInbox(key, { kind: "steer", body: "old" });
    const { digest } = await before.putAttachment("text/plain", new Uint8Array([104, 105]));
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V13}; PRAGMA user_version = 12`);
    db.close();

    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    await store.enqueueInbox(key, { kind: "steer", body: "new", principalId: "alice" });
    const drained = await store.drainInbox({ submissionId: "run", attemptId: "att-1", kinds: ["steer"] });
    expect(drained.map((r) => r.payload)).toEqual([
      { body: "old", origin: "steer" },
      { body: "new", origin: "steer", principalId: "alice" },
    ]);
    expect(await store.isAttachmentUploader(digest, "alice"), "no uploader was known before v13").toBe(false);
    await store.addAttachmentUploader(digest, "alice");
    expect(await store.isAttachmentUploader(digest, "alice")).toBe(true);
    await store.close();
  });

  it("opens a version 11 file (before deletion marks) at version 12: its conversations take admissions, a reservation marks one", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    await before.admitSubmission({ id: "old", conversationId: "conv-old", sessionKey: key, input: { kind: "user", body: "o" }, createdAt: clock.now() });
    await before.cancelSubmission("old", { errorCode: "cancelled", error: "cancelled: bye" });
    await before.finalizeSettlement("old");
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V12}; PRAGMA user_version = 11`);
    db.close();

    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    const { submission } = await store.admitSubmission({ id: "new", conversationId: "conv-new", sessionKey: key, input: { kind: "user", body: "n" }, createdAt: clock.now() });
    expect(submission.conversationId, "the migrated conversation takes admissions").toBe("conv-old");
    await store.cancelSubmission("new", { errorCode: "cancelled", error: "cancelled: bye" });
    await store.finalizeSettlement("new");
    expect(await store.reserveDeletion(key)).toBe(true);
    await expect(store.admitSubmission({ id: "refused", conversationId: "conv-x", sessionKey: key, input: { kind: "user", body: "r" }, createdAt: clock.now() })).rejects.toMatchObject({ code: "session_busy" });
    await store.close();
  });

  it("opens a version 13 file (before retry reasons) at version 15: a row released in it keeps its last error, a release stores its reason", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    await before.admitSubmission({ id: "old", conversationId: "conv-old", sessionKey: key, input: { kind: "user", body: "o" }, createdAt: clock.now() });
    await before.claimSubmission({ submissionId: "old", attemptId: "att-1", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    await before.releaseSubmission({ submissionId: "old", attemptId: "att-1", lastError: "boom" });
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V14}; PRAGMA user_version = 13`);
    db.close();

    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    const old = await store.getSubmission("old");
    expect(old).toMatchObject({ status: "queued", lastError: "boom" });
    expect(old.retry).toBeUndefined();
    await store.claimSubmission({ submissionId: "old", attemptId: "att-2", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    await store.releaseSubmission({ submissionId: "old", attemptId: "att-2", lastError: "429", retry: { reason: "rate_limited", status: 429 } });
    expect((await store.getSubmission("old")).retry).toEqual({ reason: "rate_limited", status: 429 });
    await store.close();
  });

  it("opens a version 9 file (before durable waits) at version 10: a parent waiting in it still wakes, call waits and delayed messages work", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const before = openSqliteStore({ path, clock });
    await before.admitSubmission({ id: "parent", conversationId: "conv-parent", sessionKey: key, input: { kind: "user", body: "p" }, createdAt: clock.now() });
    await before.claimSubmission({ submissionId: "parent", attemptId: "att-1", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    await before.waitSubmission({ submissionId: "parent", attemptId: "att-1", pendingCalls: ["call-1"] });
    await before.close();
    const db = new DatabaseSync(path);
    db.exec(`${UNDO_V10}; PRAGMA user_version = 9`);
    db.close();

    const store = openSqliteStore({ path, clock });
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
    const parent = await store.getSubmission("parent");
    expect(parent).toMatchObject({ status: "waiting", pendingCalls: ["call-1"] });
    expect(parent.waitingFor, "a row parked before v10 has no entries described").toBeUndefined();
    const out = await store.deliverChildOutcome({ parentSubmissionId: "parent", callId: "call-1", drafts: [delta(parent.conversationId, "x")] });
    expect(out.delivered && out.requeued).toBe(true);
    expect(await store.getCallWait("parent", "call-1")).toBeUndefined();
    const later = (await store.admitSubmission({
      id: "later",
      conversationId: "conv-parent",
      sessionKey: key,
      input: { kind: "user", body: "later", notBefore: new Date(clock.now() + 60_000).toISOString() },
      createdAt: clock.now(),
      delayedUntil: clock.now() + 60_000,
    })).submission;
    expect(later).toMatchObject({ status: "waiting", delayedUntil: clock.now() + 60_000 });
    expect((await store.getSessionHead(key))?.id, "the delayed message is outside the order").toBe("parent");
    await store.close();
  });

  it("migrates an empty (version 0) SQLite file forward", async () => {
    const path = freshPath();
    const db = new DatabaseSync(path);
    db.exec("CREATE TABLE unrelated (x)"); // a file exists, but holds no harness schema
    db.close();
    expect(pragma(path, "user_version")).toBe(0);
    const store = openSqliteStore({ path });
    expect(await store.listRunnable()).toEqual([]);
    await store.close();
    expect(pragma(path, "user_version")).toBe(SCHEMA_VERSION);
  });

  it("two stores on one file see each other's writes, and their CAS does not double-claim", async () => {
    const path = freshPath();
    const clock = new ManualClock();
    const a = openSqliteStore({ path, clock });
    const b = openSqliteStore({ path, clock });
    const { conversation } = await a.ensureConversation({ id: "conv-1", key, createdAt: clock.now() });
    expect((await b.ensureConversation({ id: "conv-2", key, createdAt: clock.now() })).created).toBe(false);
    await a.admitSubmission({ id: "s", conversationId: conversation.id, sessionKey: key, input: { kind: "user", body: "x" }, createdAt: clock.now() });
    await b.claimSubmission({ submissionId: "s", attemptId: "b", ownerId: "b", leaseExpiresAt: clock.now() + 1 });
    await expect(a.claimSubmission({ submissionId: "s", attemptId: "a", ownerId: "a", leaseExpiresAt: clock.now() + 1 })).rejects.toMatchObject({ code: "claim_lost" });
    const [r1] = await a.appendRecords(conversation.id, [delta(conversation.id, "from a")]);
    await expect(b.appendRecords(conversation.id, [delta(conversation.id, "stale")], { expectedHead: "" })).rejects.toMatchObject({ code: "claim_lost" });
    const [r2] = await b.appendRecords(conversation.id, [delta(conversation.id, "from b")], { expectedHead: r1!.id, fence: { submissionId: "s", attemptId: "b" } });
    expect((await a.readRecords(conversation.id)).map((r) => r.id)).toEqual([r1!.id, r2!.id]);
    await a.close();
    await b.close();
  });

  it("fails a write with SqliteStoreBusy when another connection holds the lock past the busy timeout", async () => {
    const path = freshPath();
    const store = openSqliteStore({ path, busyTimeoutMs: 30 });
    const { conversation } = await store.ensureConversation({ id: "conv-1", key, createdAt: 0 });
    const holder = new DatabaseSync(path);
    holder.exec("BEGIN IMMEDIATE");
    try {
      const err = await store.appendRecords(conversation.id, [delta(conversation.id, "x")]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SqliteStoreBusy);
      expect((err as SqliteStoreBusy).code).toBe("sqlite_busy");
      expect((err as Error).message).toContain("waited 30 ms");
      // Reads still work while another connection writes (WAL).
      expect(await store.getConversation(key)).toEqual(conversation);
    } finally {
      holder.exec("COMMIT");
      holder.close();
    }
    expect(await store.appendRecords(conversation.id, [delta(conversation.id, "x")])).toHaveLength(1);
    await store.close();
  });

  it("rolls back a batch that fails half way: nothing of it is visible, the store stays usable", async () => {
    const store = openSqliteStore({ path: freshPath() });
    const { conversation } = await store.ensureConversation({ id: "conv-1", key, createdAt: 0 });
    const [kept] = await store.appendRecords(conversation.id, [delta(conversation.id, "kept")]);
    // The second draft cannot be serialized (a BigInt), after the first one was inserted.
    await expect(
      store.appendRecords(conversation.id, [delta(conversation.id, "lost"), delta(conversation.id, "bad", { n: 1n })]),
    ).rejects.toThrow(TypeError);
    expect(await store.readRecords(conversation.id)).toEqual([kept]);
    expect(await store.appendRecords(conversation.id, [delta(conversation.id, "next")])).toHaveLength(1);
    await store.close();
  });

  it("answers every statement from an index or key, never by scanning a table", async () => {
    const path = freshPath();
    await openSqliteStore({ path }).close();
    const db = new DatabaseSync(path);
    try {
      for (const [name, sql] of Object.entries(SQL)) {
        if (/^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(sql)) continue;
        const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((row) => row.detail as string);
        expect(plan.filter((step) => /^SCAN (?!CONSTANT ROW)/.test(step)), `${name}: ${plan.join(" | ")}`).toEqual([]);
      }
    } finally {
      db.close();
    }
  });

  it("appends to an unknown conversation with ConversationNotFound", async () => {
    const store = openSqliteStore({ path: ":memory:" });
    await expect(store.appendRecords("nope", [delta("nope", "x")])).rejects.toMatchObject({ code: "conversation_not_found" });
    await store.close();
  });

  it("rejects calls after close", async () => {
    const store = openSqliteStore({ path: ":memory:" });
    await store.close();
    await expect(store.listRunnable()).rejects.toThrow();
  });
});
