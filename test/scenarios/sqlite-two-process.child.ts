/**
 * The second process of the two-process SQLite tests. Opens the store file named in argv[2]
 * with the options of argv[3] (JSON), prints `ready`, waits for `go` on stdin, prints `started`,
 * runs its task and prints one JSON line with the outcome. Never throws: errors are reported in the JSON.
 */
import { createInterface } from "node:readline";
import type { RecordDraft } from "../../src/protocol/records.ts";
import type { Clock } from "../../src/ports/clock.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";

interface Task {
  task: "append" | "claim" | "groups";
  busyTimeoutMs: number;
  /** Added to the wall clock: lets the child mint ids from a clock skewed against the parent's. */
  clockOffsetMs?: number;
  conversationId?: string;
  batches?: number;
  batchSize?: number;
  label?: string;
  /** `groups`: the conversations each round appends to at once (one group commit). */
  conversationIds?: string[];
}

const [path, json] = process.argv.slice(2);
const task = JSON.parse(json!) as Task;
const clock: Clock = {
  now: () => Date.now() + (task.clockOffsetMs ?? 0),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const report = (outcome: object) => process.stdout.write(`${JSON.stringify(outcome)}\n`);

const store = openSqliteStore({ path: path!, clock, busyTimeoutMs: task.busyTimeoutMs });
process.stdout.write("ready\n");
await lines.next(); // "go"

const started = Date.now();
// Pipes are synchronous on Linux: the parent has this line before the task can block on a lock.
process.stdout.write("started\n");
try {
  if (task.task === "append") {
    for (let b = 0; b < task.batches!; b++) {
      const drafts: RecordDraft[] = [];
      for (let i = 0; i < task.batchSize!; i++) {
        drafts.push({
          kind: "assistant_text_delta",
          conversationId: task.conversationId!,
          session: "default",
          time: new Date(clock.now()).toISOString(),
          payload: { text: `${task.label}-${b}-${i}` },
        });
      }
      await store.appendRecords(task.conversationId!, drafts);
    }
    report({ ok: true, elapsedMs: Date.now() - started });
  } else if (task.task === "groups") {
    // Rounds of appends to every conversation at once, each round acknowledged once all of its
    // appends resolved; runs until killed (the parent kill -9s it mid-run).
    for (let round = 0; round < 100_000; round++) {
      await Promise.all(
        task.conversationIds!.map((id) =>
          store.appendRecords(id, [
            { kind: "assistant_text_delta", conversationId: id, session: "default", time: new Date().toISOString(), payload: { text: `r${round}` } },
          ]),
        ),
      );
      process.stdout.write(`acked ${round}\n`);
    }
    report({ ok: true, elapsedMs: Date.now() - started });
  } else {
    const claimed: string[] = [];
    let lost = 0;
    const runnable = await store.listRunnable();
    // Random order, like the parent: the two claimers collide all along the run.
    for (let i = runnable.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [runnable[i], runnable[j]] = [runnable[j]!, runnable[i]!];
    }
    for (const sub of runnable) {
      try {
        await store.claimSubmission({
          submissionId: sub.id,
          attemptId: `child-${sub.id}`,
          ownerId: "child",
          leaseExpiresAt: clock.now() + 60_000,
        });
        claimed.push(sub.id);
      } catch (err) {
        if ((err as { code?: string }).code !== "claim_lost") throw err;
        lost += 1;
      }
    }
    report({ ok: true, claimed, lost, elapsedMs: Date.now() - started });
  }
} catch (err) {
  const e = err as Error & { code?: string };
  report({ ok: false, name: e.name, code: e.code, message: e.message, elapsedMs: Date.now() - started });
} finally {
  await store.close();
  process.stdin.destroy();
}
