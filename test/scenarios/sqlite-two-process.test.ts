/**
 * Two real processes on one SQLite file: the second writer waits for the lock or fails cleanly
 * with `SqliteStoreBusy`, concurrent appends lose and duplicate nothing, and a claim race has
 * exactly one winner per submission.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { newId } from "../../src/conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../../src/protocol/records.ts";
import { openSqliteStore, type SqliteStore } from "../../src/sqlite/index.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const node = join(repo, "node_modules/.bin/node");
const childScript = fileURLToPath(new URL("./sqlite-two-process.child.ts", import.meta.url));

const dir = mkdtempSync(join(tmpdir(), "sqlite-2p-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Outcome {
  ok: boolean;
  elapsedMs: number;
  name?: string;
  code?: string;
  message?: string;
  claimed?: string[];
  lost?: number;
}

interface Child {
  ready: Promise<void>;
  go(): void;
  /** The child has begun its task (its elapsed time counts from here). */
  started: Promise<void>;
  outcome: Promise<Outcome>;
  /** The child's next stdout line. */
  nextLine(): Promise<string>;
  kill(signal: NodeJS.Signals): void;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill();
});

function startChild(path: string, task: object): Child {
  const proc = spawn(node, ["--disable-warning=ExperimentalWarning", childScript, path, JSON.stringify(task)], {
    cwd: repo,
  });
  children.push(proc);
  let stderr = "";
  proc.stderr.on("data", (chunk) => (stderr += chunk));
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const failed = new Promise<never>((_, reject) =>
    proc.on("exit", (code) => reject(new Error(`child exited (${code}) early: ${stderr}`))),
  );
  const nextLine = async () => {
    const line = await Promise.race([lines.next(), failed]);
    if (line.done) throw new Error(`child closed stdout: ${stderr}`);
    return line.value;
  };
  const expectLine = (want: string) => async () => {
    const line = await nextLine();
    if (line !== want) throw new Error(`child said ${line} instead of ${want}: ${stderr}`);
  };
  const ready = expectLine("ready")();
  let outcome: Promise<Outcome> | undefined;
  const started = ready.then(expectLine("started"));
  return {
    ready,
    go: () => proc.stdin.write("go\n"),
    started,
    // Read on first use: a `groups` child prints acknowledgements instead.
    get outcome() {
      return (outcome ??= started.then(nextLine).then((line) => JSON.parse(line) as Outcome));
    },
    nextLine,
    kill: (signal) => proc.kill(signal),
  };
}

function drafts(conversationId: string, label: string, batch: number, size: number): RecordDraft[] {
  return Array.from({ length: size }, (_, i) => ({
    kind: "assistant_text_delta" as const,
    conversationId,
    session: "default",
    time: new Date().toISOString(),
    payload: { text: `${label}-${batch}-${i}` },
  }));
}

async function freshConversation(store: SqliteStore, session = "default"): Promise<string> {
  const { conversation } = await store.ensureConversation({
    id: newId(Date.now()),
    key: { agent: "a", instance: "i", session },
    createdAt: Date.now(),
  });
  return conversation.id;
}

/** Both processes claim in random order, so their attempts collide all along the run. */
function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function text(record: ConversationRecord): string {
  return (record.payload as { text: string }).text;
}

function integrity(path: string): string {
  const db = new DatabaseSync(path);
  try {
    return db.prepare("PRAGMA integrity_check").get()!.integrity_check as string;
  } finally {
    db.close();
  }
}

describe("sqlite store, two processes on one file", () => {
  it("the second writer waits for the first's write transaction, then commits", async () => {
    const path = join(dir, "wait.db");
    const store = openSqliteStore({ path });
    const conversationId = await freshConversation(store);
    const child = startChild(path, { task: "append", busyTimeoutMs: 10_000, conversationId, batches: 1, batchSize: 2, label: "child" });
    await child.ready;

    // Hold the write lock on a separate connection while the child tries to write.
    const holder = new DatabaseSync(path);
    holder.exec("BEGIN IMMEDIATE");
    child.go();
    await child.started;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await store.readRecords(conversationId), "nothing lands while the lock is held").toEqual([]);
    holder.exec("COMMIT");
    holder.close();

    const outcome = await child.outcome;
    expect(outcome, "the child's append succeeded after waiting").toMatchObject({ ok: true });
    expect(outcome.elapsedMs, "the child waited for the lock").toBeGreaterThanOrEqual(250);
    expect((await store.readRecords(conversationId)).map(text)).toEqual(["child-0-0", "child-0-1"]);
    await store.close();
  });

  it("the second writer fails cleanly with SqliteStoreBusy after its busy timeout, writing nothing", async () => {
    const path = join(dir, "busy.db");
    const store = openSqliteStore({ path });
    const conversationId = await freshConversation(store);
    await store.appendRecords(conversationId, drafts(conversationId, "before", 0, 1));
    const child = startChild(path, { task: "append", busyTimeoutMs: 100, conversationId, batches: 1, batchSize: 2, label: "child" });
    await child.ready;

    const holder = new DatabaseSync(path);
    holder.exec("BEGIN IMMEDIATE");
    child.go();
    const outcome = await child.outcome;
    holder.exec("COMMIT");
    holder.close();

    expect(outcome).toMatchObject({ ok: false, name: "SqliteStoreBusy", code: "sqlite_busy" });
    expect(outcome.message).toContain("locked by another connection");
    expect((await store.readRecords(conversationId)).map(text), "the failed append left nothing").toEqual(["before-0-0"]);
    await store.appendRecords(conversationId, drafts(conversationId, "after", 0, 1));
    expect((await store.readRecords(conversationId)).map(text)).toEqual(["before-0-0", "after-0-0"]);
    await store.close();
    expect(integrity(path)).toBe("ok");
  });

  it("concurrent appends to one conversation lose nothing, duplicate nothing, and keep ids increasing", async () => {
    const path = join(dir, "hammer.db");
    const store = openSqliteStore({ path });
    const conversationId = await freshConversation(store);
    const batches = 400;
    const size = 3;
    // The child's clock runs an hour behind: its ids still follow the head, never go below it.
    const child = startChild(path, {
      task: "append",
      busyTimeoutMs: 5_000,
      clockOffsetMs: -3_600_000,
      conversationId,
      batches,
      batchSize: size,
      label: "child",
    });
    await child.ready;
    child.go();

    // Write and tail at once: a tailing reader must never see a record appear below its offset.
    const tailed: ConversationRecord[] = [];
    const tail = async () => {
      const page = await store.readRecords(conversationId, tailed.at(-1)?.id ?? "");
      tailed.push(...page);
    };
    for (let b = 0; b < batches; b++) {
      await store.appendRecords(conversationId, drafts(conversationId, "parent", b, size));
      await tail();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const outcome = await child.outcome;
    expect(outcome).toMatchObject({ ok: true });
    await tail();

    const log = await store.readRecords(conversationId);
    expect(log).toHaveLength(2 * batches * size);
    expect(new Set(log.map((r) => r.id)).size, "no duplicate ids").toBe(log.length);
    for (let i = 1; i < log.length; i++) expect(log[i]!.id > log[i - 1]!.id, `id #${i} increases`).toBe(true);
    expect(new Set(log.map(text)).size, "no lost or repeated record").toBe(log.length);
    // A batch is visible all at once: its records are adjacent and in order.
    for (let i = 0; i < log.length; i += size) {
      const [label, batch] = text(log[i]!).split("-");
      expect(log.slice(i, i + size).map(text)).toEqual(Array.from({ length: size }, (_, j) => `${label}-${batch}-${j}`));
    }
    expect(tailed.map((r) => r.id), "the tailing reader saw exactly the log").toEqual(log.map((r) => r.id));
    await store.close();
    expect(integrity(path)).toBe("ok");
  });

  it("kill -9 during group commits loses no acknowledged write, and a group is all or nothing", async () => {
    const path = join(dir, "groups-kill.db");
    const store = openSqliteStore({ path });
    const conversationIds: string[] = [];
    for (let i = 0; i < 6; i++) conversationIds.push(await freshConversation(store, `g${i}`));
    const child = startChild(path, { task: "groups", busyTimeoutMs: 5_000, conversationIds });
    await child.ready;
    child.go();
    await child.started;
    let acked = -1;
    while (acked < 40) acked = Number((await child.nextLine()).split(" ")[1]);
    child.kill("SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 100));

    const logs = await Promise.all(conversationIds.map((id) => store.readRecords(id)));
    const rounds = logs.map((log) => log.length);
    for (const log of logs) {
      // Every acknowledged round is there, in order, with no gap and nothing twice.
      expect(log.map(text)).toEqual(Array.from({ length: log.length }, (_, r) => `r${r}`));
      expect(log.length).toBeGreaterThan(acked);
    }
    // The round in flight at the kill committed in every conversation or in none.
    expect(new Set(rounds).size, `rounds per conversation: ${rounds.join(", ")}`).toBe(1);
    await store.close();
    expect(integrity(path)).toBe("ok");
  });

  it("a claim race between two processes has exactly one winner per submission", async () => {
    const path = join(dir, "claims.db");
    const store = openSqliteStore({ path });
    const ids: string[] = [];
    for (let i = 0; i < 400; i++) {
      const key = { agent: "a", instance: "i", session: `s${i}` };
      const conversationId = await freshConversation(store, key.session);
      const sub = (await store.admitSubmission({
        id: `sub-${String(i).padStart(3, "0")}`,
        conversationId,
        sessionKey: key,
        input: { kind: "user", body: `hi ${i}` },
        createdAt: Date.now(),
      })).submission;
      ids.push(sub.id);
    }
    const child = startChild(path, { task: "claim", busyTimeoutMs: 5_000 });
    await child.ready;
    child.go();

    const mine: string[] = [];
    for (const sub of shuffle(await store.listRunnable())) {
      try {
        await store.claimSubmission({ submissionId: sub.id, attemptId: `parent-${sub.id}`, ownerId: "parent", leaseExpiresAt: Date.now() + 60_000 });
        mine.push(sub.id);
      } catch (err) {
        if ((err as { code?: string }).code !== "claim_lost") throw err;
      }
    }
    const outcome = await child.outcome;
    expect(outcome).toMatchObject({ ok: true });
    const theirs = outcome.claimed!;

    expect(mine.filter((id) => theirs.includes(id)), "no submission claimed twice").toEqual([]);
    expect([...mine, ...theirs].sort(), "every submission claimed once").toEqual(ids);
    for (const id of ids) {
      const sub = await store.getSubmission(id);
      expect(sub.status).toBe("running");
      expect(sub.attemptCount, `${id} charged once`).toBe(1);
      expect(sub.attemptId).toBe(mine.includes(id) ? `parent-${id}` : `child-${id}`);
    }
    await store.close();
  });
});
