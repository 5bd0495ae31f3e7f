import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import { killExamples, startExampleProcess, stopExample, type ExampleProcess } from "./support.ts";

/** `npm run example -- scheduler` as processes: replicas and a restart over one data dir. */

const DISPATCH_ID = /^schedule:standup:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z)$/;

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-scheduler-"));
});
afterEach(killExamples);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function start(dir: string): Promise<ExampleProcess> {
  return startExampleProcess(["run", "example", "--", "scheduler"], { DATA_DIR: dir, TICK_SECONDS: "1" });
}

describe("examples/scheduler", () => {
  it("two replicas over one data dir and a restart mid-window fire each window once", async () => {
    const dir = join(dataDir, "replicas");
    const [a, b] = await Promise.all([start(dir), start(dir)]);
    await new Promise((r) => setTimeout(r, 3_500));
    expect(await stopExample(a)).toEqual({ code: 0, signal: null });
    // A restart (a fresh process) fires the window it starts in, which B has fired already.
    const again = await start(dir);
    await new Promise((r) => setTimeout(r, 1_500));
    await Promise.all([stopExample(b), stopExample(again)]);

    const store = openSqliteStore({ path: join(dir, "harness.db") });
    let records;
    let ids: string[] = [];
    try {
      const conversation = await store.getConversation({ agent: "reporter", instance: "daily", session: "default" });
      records = await store.readRecords(conversation.id);
      for (const status of ["queued", "running", "waiting", "terminalizing", "settled"] as const) {
        ids.push(...(await store.listByStatus(status)).filter((s) => s.conversationId === conversation.id).map((s) => s.id));
      }
    } finally {
      await store.close();
    }

    // Every submission is a window's; a window's id is its only id, so a window is admitted once.
    expect(ids.every((id) => DISPATCH_ID.test(id)), ids.join("\n")).toBe(true);
    expect(ids.length).toBeGreaterThanOrEqual(4);
    // ... and runs once: one signal record and at most one settlement per submission (the last
    // windows may still be queued: a SIGTERM hands them back unrun).
    const signals = records.filter((r) => r.kind === "signal") as ConversationRecordOf<"signal">[];
    const settled = records.filter((r) => r.kind === "submission_settled") as ConversationRecordOf<"submission_settled">[];
    const once = (list: { submissionId?: string }[]) => new Set(list.map((r) => r.submissionId)).size === list.length;
    expect(once(signals)).toBe(true);
    expect(once(settled)).toBe(true);
    expect(signals.every((s) => ids.includes(s.submissionId!))).toBe(true);
    for (const s of signals) {
      expect(s.payload).toMatchObject({ type: "scheduled_tick", sender: { source: "scheduler", schedule: "standup" }, tag: s.submissionId });
    }
    expect(settled.length).toBeGreaterThanOrEqual(3);
    expect(settled.every((r) => r.payload.status === "succeeded")).toBe(true);
    const reports = records.filter((r) => r.kind === "assistant_message_completed").map((r) => JSON.stringify(r.payload));
    expect(reports.some((t) => /Report for schedule:standup:.*all quiet/.test(t))).toBe(true);

    // Every replica fired: the windows the other had fired came back as replays.
    const fired = (ex: ExampleProcess) => [...ex.output().matchAll(/fired window \S+: (\S+)/g)].map((m) => m[1]);
    const replayed = (ex: ExampleProcess) => [...ex.output().matchAll(/was already fired .*: (\S+)/g)].map((m) => m[1]);
    const allFired = [...fired(a), ...fired(b), ...fired(again)];
    // Every admission logged is in the store. (Not asserted: that no window was logged as new by
    // two processes. Admission derives `replayed` from the stored createdAt equalling its own
    // clock reading, so two replicas admitting one window in the same millisecond both read
    // `replayed: false` — a library issue, reported; the store still holds one submission.)
    expect(allFired.filter((id) => !ids.includes(id!))).toEqual([]);
    expect(replayed(a).length + replayed(b).length).toBeGreaterThan(0);
    // The restart fires the window it starts in at once, one B fires at its opening: whichever
    // process comes second (a loaded machine can delay B's timer past the restart) reports it
    // replayed. Only when B's timer slipped past that whole window did B not fire it at all.
    const windows = (ex: ExampleProcess) => [...ex.output().matchAll(/(?:fired window|was already fired) .*?: (\S+)/g)].map((m) => m[1]);
    const restartsFirst = windows(again)[0];
    expect(restartsFirst).toBeDefined();
    if (windows(b).includes(restartsFirst)) expect([...replayed(b), ...replayed(again)]).toContain(restartsFirst);
  }, 90_000);
});
