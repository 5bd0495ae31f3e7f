/**
 * Group commit in the SQLite store (ADR 0022): the writes of one event-loop turn share one
 * transaction, each in its own savepoint; a failing write is rolled back alone; every caller is
 * answered only after the COMMIT.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import type { ConversationRecord, RecordDraft } from "../../../src/protocol/records.ts";
import { systemClock } from "../../../src/ports/clock.ts";
import { SqliteDatabase } from "../../../src/sqlite/database.ts";
import { migrate } from "../../../src/sqlite/schema.ts";
import { SqliteStore } from "../../../src/sqlite/sqlite-store.ts";

const dir = mkdtempSync(join(tmpdir(), "sqlite-group-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A file store with its database in reach, to count the groups it committed. */
function open(): { store: SqliteStore; db: SqliteDatabase; path: string } {
  const path = join(dir, `group-${++files}.db`);
  const raw = new DatabaseSync(path, { timeout: 5_000 });
  raw.exec("PRAGMA journal_mode = WAL");
  raw.exec("PRAGMA synchronous = NORMAL");
  migrate(raw, path);
  const db = new SqliteDatabase(raw, path, systemClock, 5_000);
  return { store: new SqliteStore(db), db, path };
}

function delta(conversationId: string, text: string, payload: unknown = { text }): RecordDraft {
  return { kind: "assistant_text_delta", conversationId, session: "default", time: "2026-01-01T00:00:00.000Z", payload } as RecordDraft;
}

async function conversation(store: SqliteStore, instance: string): Promise<string> {
  const { conversation } = await store.ensureConversation({ id: `conv-${instance}`, key: { agent: "a", instance, session: "default" }, createdAt: 1 });
  return conversation.id;
}

/** What another connection to the file sees (only committed rows). */
function committedTexts(path: string, conversationId: string): string[] {
  const other = new DatabaseSync(path);
  try {
    return other
      .prepare("SELECT record FROM records WHERE conversation_id = ? ORDER BY id")
      .all(conversationId)
      .map((row) => (JSON.parse(row.record as string) as ConversationRecord & { payload: { text: string } }).payload.text);
  } finally {
    other.close();
  }
}

const texts = (records: ConversationRecord[]) => records.map((r) => (r.payload as { text: string }).text);

describe("sqlite store: group commit", () => {
  it("commits the appends of two sessions made in one turn in one transaction, both durable", async () => {
    const { store, db, path } = open();
    const a = await conversation(store, "a");
    const b = await conversation(store, "b");
    const before = db.groupCommits;
    const both = Promise.all([store.appendRecords(a, [delta(a, "a1")]), store.appendRecords(b, [delta(b, "b1"), delta(b, "b2")])]);
    // Nothing is written before the group runs: neither this connection nor another sees it yet.
    expect(await store.readRecords(a)).toEqual([]);
    const [fromA, fromB] = await both;
    expect(db.groupCommits).toEqual({ groups: before.groups + 1, writes: before.writes + 2 });
    expect(texts(fromA)).toEqual(["a1"]);
    expect(texts(fromB)).toEqual(["b1", "b2"]);
    // Durable when answered: another connection reads them.
    expect(committedTexts(path, a)).toEqual(["a1"]);
    expect(committedTexts(path, b)).toEqual(["b1", "b2"]);
    await store.close();
  });

  it("answers each caller only after the COMMIT: a reader on another connection sees its write when its promise resolves", async () => {
    const { store, path } = open();
    const ids = await Promise.all(["a", "b", "c"].map((i) => conversation(store, i)));
    const seen = await Promise.all(ids.map((id) => store.appendRecords(id, [delta(id, `x-${id}`)]).then(() => committedTexts(path, id))));
    expect(seen).toEqual(ids.map((id) => [`x-${id}`]));
    await store.close();
  });

  it("a refused write inside a group fails alone; the others in the group commit", async () => {
    const { store, db, path } = open();
    const a = await conversation(store, "a");
    const b = await conversation(store, "b");
    const c = await conversation(store, "c");
    const [headOfB] = await store.appendRecords(b, [delta(b, "b0")]);
    const before = db.groupCommits;
    const results = await Promise.allSettled([
      store.appendRecords(a, [delta(a, "a1")]),
      // A compare-and-set that loses: the head of b is not empty any more.
      store.appendRecords(b, [delta(b, "b-refused")], { expectedHead: "" }),
      // Fails half way (a bigint does not serialize) after its first record was inserted.
      store.appendRecords(c, [delta(c, "c-half"), delta(c, "bad", { n: 1n })]),
      store.appendRecords(b, [delta(b, "b1")], { expectedHead: headOfB!.id }),
    ]);
    expect(db.groupCommits.groups).toBe(before.groups + 1);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "claim_lost" });
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
    expect(committedTexts(path, a)).toEqual(["a1"]);
    expect(committedTexts(path, b)).toEqual(["b0", "b1"]);
    expect(committedTexts(path, c), "the failed write's first record was rolled back with it").toEqual([]);
    // The store goes on as usual.
    expect(texts(await store.appendRecords(c, [delta(c, "c1")]))).toEqual(["c1"]);
    await store.close();
  });

  it("writes to one conversation in one group see each other in call order (ids strictly increasing)", async () => {
    const { store, db } = open();
    const a = await conversation(store, "a");
    const before = db.groupCommits.groups;
    const appended = await Promise.all(Array.from({ length: 20 }, (_, i) => store.appendRecords(a, [delta(a, `t${i}`)])));
    expect(db.groupCommits.groups).toBe(before + 1);
    const ids = appended.flat().map((r) => r.id);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(20);
    expect(texts(await store.readRecords(a))).toEqual(Array.from({ length: 20 }, (_, i) => `t${i}`));
    await store.close();
  });

  it("a close commits the writes queued for the turn; a write after close is refused", async () => {
    const { store, path } = open();
    const a = await conversation(store, "a");
    const pending = store.appendRecords(a, [delta(a, "last")]);
    await store.close();
    expect(texts(await pending)).toEqual(["last"]);
    expect(committedTexts(path, a)).toEqual(["last"]);
    await expect(store.appendRecords(a, [delta(a, "late")])).rejects.toThrow();
  });
});
