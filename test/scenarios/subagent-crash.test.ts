/**
 * Crash proofs for durable subagents (issue 10, embedded over one SQLite file): the process is
 * dropped (`close({abandon: true})`: nothing after the fault point runs, as a kill leaves it) while
 * the parent waits, while a child runs, between a child's settlement record and the delivery of
 * its outcome, between the requeue and the doorbell, and between a child's admission and its
 * `task_spawned` record; a fresh runtime over the same file recovers. Every case ends with the
 * parent settled once, every outcome delivered once, and the parent woken once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { childAddress } from "../../src/conversation/task-names.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { FaultPhase } from "../../src/ports/faults.ts";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import type { ScriptStep } from "../../src/agent/scripted-model.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { hangForever, scriptedAgent, settleTicks } from "../support/runtime-kit.ts";
import { lastUserText as lastUser, textOf, toolResults } from "../support/model-messages.ts";

const LEASE_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), "subagent-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const results = (messages: unknown) => toolResults(messages).map(textOf);

/** Stateless scripts (a restarted process replays them from the transcript). */
const leadStep: ScriptStep = (messages) =>
  results(messages).length > 0
    ? [{ text: `summary: ${results(messages).join(" | ")}` }]
    : [
        { toolCall: { id: "call-a", name: "task", arguments: { agent: "researcher", prompt: "alpha" } } },
        { toolCall: { id: "call-b", name: "task", arguments: { agent: "researcher", prompt: "beta" } } },
      ];
const researcherStep: ScriptStep = (messages) => [{ text: "researching " }, { text: `on ${lastUser(messages)}` }];

function agents() {
  const lead = scriptedAgent(Array.from({ length: 20 }, () => leadStep));
  const researcher = scriptedAgent(Array.from({ length: 20 }, () => researcherStep));
  return { lead, researcher, definitions: { lead: lead.definition, researcher: researcher.definition } };
}

function runtimeOver(path: string, clock: ManualClock, events: HarnessEvent[], faults?: (phase: FaultPhase, id: string) => void | Promise<void>) {
  const store = openSqliteStore({ path, clock });
  const { lead, definitions } = agents();
  const runtime: Runtime = createRuntime({
    agents: definitions,
    store,
    clock,
    leaseMs: LEASE_MS,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    sweepIntervalMs: 5_000,
    subagents: { lead: ["researcher"] },
    observers: [(e) => events.push(e)],
    faults,
  });
  return { runtime, store, lead };
}

/** Crashes the first time `phase` is reached for a submission `which` picks; recovers in a new runtime. */
async function crashAndRecover(
  name: string,
  phase: FaultPhase,
  which: (id: string, parentId: string) => boolean,
  options: { parentWaiting?: boolean } = {},
) {
  const path = join(dir, `${name}.db`);
  const clock = new ManualClock();
  const events: HarnessEvent[] = [];
  const parentId = `${name}-parent`;
  let reached!: () => void;
  const atPhase = new Promise<void>((r) => (reached = r));
  let crashed = false;
  const first = runtimeOver(path, clock, events, async (p, id) => {
    if (p !== phase || !which(id, parentId)) return;
    if (options.parentWaiting) {
      // Hold every child here (none may settle: the parent must die with all its calls pending)
      // until the parent has parked, then die.
      while ((await first.store.getSubmission(parentId)).status !== "waiting") await new Promise((r) => setImmediate(r));
      reached();
      return hangForever();
    }
    if (crashed) return;
    crashed = true;
    reached();
    return hangForever();
  });
  await first.runtime.start();
  await first.runtime.dispatch({ agent: "lead", instance: name, dispatchId: parentId, message: { kind: "user", body: "go" } });
  await Promise.race([atPhase, settleTicks(2_000).then(() => Promise.reject(new Error(`${phase} never reached`)))]);
  await first.runtime.close({ abandon: true });
  const crashedEvents = events.length;
  const atCrash = await first.store.getSubmission(parentId);

  const second = runtimeOver(path, clock, events);
  await second.runtime.start();
  const settled = second.runtime.wait(parentId);
  // Past the lease and the settlement grace; the sweep takes back what the dead runtime held.
  for (let i = 0; i < 4; i++) {
    await clock.advance(LEASE_MS / 2 + 1_000);
    await settleTicks();
  }
  expect(await settled).toMatchObject({ status: "succeeded" });
  const parent = await second.store.getSubmission(parentId);
  const log = await second.store.readRecords(parent.conversationId);
  await second.runtime.close();
  await second.store.close();
  await first.store.close();
  return { parent, log, events, after: events.slice(crashedEvents), lead: second.lead, atCrash };
}

/** Every case's invariants: one settlement, each call answered exactly once with its child's answer, one wake per wait. */
function expectIntact(log: ConversationRecord[], events: HarnessEvent[], parentId: string) {
  expect(log.filter((r) => r.kind === "submission_settled" && r.submissionId === parentId)).toHaveLength(1);
  const outcomes = log.filter((r) => r.kind === "tool_outcome").map((r) => r.payload);
  expect(outcomes.map((o) => o.callId).sort()).toEqual(["call-a", "call-b"]);
  expect(outcomes.map((o) => (o.content?.[0] as { text: string }).text).sort()).toEqual(["researching on alpha", "researching on beta"]);
  expect(log.filter((r) => r.kind === "task_spawned").map((r) => r.payload.callId).sort()).toEqual(["call-a", "call-b"]);
  const final = log.findLast((r) => r.kind === "assistant_message_completed")!;
  expect(JSON.stringify(final.payload)).toContain("summary: researching on alpha | researching on beta");
  const resumed = events.filter((e) => e.type === "submission_resumed" && e.correlation.submissionId === parentId);
  const waited = events.filter((e) => e.type === "submission_waiting" && e.correlation.submissionId === parentId);
  expect(resumed.length, "woken once per wait").toBe(waited.length);
}

const isChildA = (id: string, parentId: string) => id === childAddress({ submissionId: parentId, instance: parentId.replace(/-parent$/, "") }, "call-a").submissionId;
const isChild = (id: string, parentId: string) => id.startsWith(`${parentId}:`);

describe("subagent crash proofs (embedded, SQLite)", () => {
  it("killed while the parent waits (its children were running): children re-run, the parent resumes with both outcomes", async () => {
    const { parent, log, events, atCrash } = await crashAndRecover("while-waiting", "mid_stream", isChild, { parentWaiting: true });
    expect(atCrash).toMatchObject({ status: "waiting", pendingCalls: ["call-a", "call-b"] });
    expect(parent.attemptCount, "the wait and the resume charged nothing").toBe(1);
    expectIntact(log, events, parent.id);
  });

  it("killed while a child runs (mid-stream): the child's second attempt settles, the parent is woken once", async () => {
    const { parent, log, events } = await crashAndRecover("child-runs", "mid_stream", isChildA);
    expectIntact(log, events, parent.id);
  });

  it("killed between a child's settlement record and the delivery to its parent: the recoverer of the terminalizing child delivers", async () => {
    const { parent, log, events } = await crashAndRecover("child-settled", "parent_waking", isChild);
    expectIntact(log, events, parent.id);
  });

  it("killed after the last delivery requeued the parent, before its doorbell: the sweep rings it", async () => {
    const { parent, log, events } = await crashAndRecover("requeued", "parent_requeued", (id, p) => id === p);
    expectIntact(log, events, parent.id);
    expect(parent.attemptCount).toBe(1);
  });

  it("killed between a child's admission and the parent's task_spawned record: the next attempt repairs it from the child's row and parks again", async () => {
    const { parent, log, events, after } = await crashAndRecover("spawn-lost", "tool_ran", (id, p) => id === p);
    expectIntact(log, events, parent.id);
    expect(after.filter((e) => e.type === "recovery" && e.decision === "spawn_record_reconciled")).toHaveLength(1);
    expect(parent.attemptCount, "the crash before the park cost one attempt").toBe(2);
    // No error outcome was synthesized for the pending task calls (they were parked again).
    expect(log.filter((r) => r.kind === "tool_outcome").every((r) => !r.payload.isError)).toBe(true);
  });
});
