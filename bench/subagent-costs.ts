/**
 * Durable subagents' costs (issue 10) on the DynamoDB store against DynamoDB Local, through a
 * runtime as the Lambda wiring builds it, with the doorbells captured (each one delivered is one
 * worker invocation) and a manual clock:
 *
 * - the read and write units of one spawn + wake: a parent whose `task` call spawns one child,
 *   the child's run and settlement (which delivers its outcome to the parent and requeues it),
 *   and the parent's resume, by phase and by store operation, beside the same work done by an
 *   in-process tool in one submission;
 * - a parent waiting an hour (its child held running elsewhere): the doorbells of its own (worker
 *   invocations, queue messages) and the DynamoDB units its wait adds to the sweeps, with the
 *   sweeper running once a minute as the construct schedules it, each sweep measured against an
 *   hour of sweeps without the waiting parent: the sweeps that do not check its wait (target: 0
 *   read units beyond the index query) and its few wait checks (ADR 0021); priced, with the
 *   storage its items take.
 */
import type { AgentTool, StreamFn } from "@earendil-works/pi-agent-core";
import { firstWaitCheckAt, nextWaitCheckAt } from "../src/engine/wait-check.ts";
import { ManualClock } from "../src/ports/clock.ts";
import type { Doorbell } from "../src/ports/queue.ts";
import { RUNTIME_DEFAULTS } from "../src/runtime/defaults.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { keylessModel, streamBlocks, type StreamBlock } from "../src/agent/block-stream.ts";
import { conversationPk, sessionPk, submissionPk } from "../src/dynamodb/keys.ts";
import { createDynamoClient } from "../src/dynamodb/index.ts";
import { addUnits, itemBytesOf, meteredDynamo, type OperationUnits, sumUnits, type Units, zeroUnits } from "./dynamo-units.ts";
import { PRICES, PRICE_NOTE } from "./prices.ts";
import { measured } from "./measured.ts";
import { atMost, figure, note } from "./report.ts";

/** Spawn + wake flows measured (fresh parents; the figures are their means). */
const RUNS = 3;
/** The child's answer, also the in-process tool's result in the comparison. */
const FOUND = "Background: 2 earlier reports match; both were fixed by clearing the export cache.";
const SWEEP_EVERY_MS = 60_000;
const HOUR_MS = 3_600_000;

const TARGET = {
  parentDoorbells: atMost(0, ""),
  /** A waiting parent that is not due costs nothing beyond the index query the sweep makes anyway. */
  idleSweepReads: atMost(0, ""),
};

/** The parent: a `task` call (or, as `solo`, the in-process `lookup`) then an answer quoting its outcome. */
function parentModel(toolName: "task" | "lookup"): StreamFn {
  const model = keylessModel("bench-parent", "bench");
  return (_m, context, options) =>
    streamBlocks(
      model,
      (): StreamBlock[] => {
        const lastUser = context.messages.findLastIndex((m) => m.role === "user");
        const result = context.messages.slice(lastUser + 1).find((m) => m.role === "toolResult");
        if (result === undefined) {
          const args: Record<string, string> =
            toolName === "task" ? { agent: "researcher", prompt: "Find background for the export error." } : { query: "export error" };
          return [{ type: "text", text: "Looking it up first." }, { type: "toolCall", id: `call_${lastUser}`, name: toolName, arguments: args }];
        }
        const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
        return [{ type: "text", text: `Priority normal. ${text}` }];
      },
      { signal: options?.signal, chunkSize: 16 },
    );
}

const researcherModel: StreamFn = (_m, _context, options) =>
  streamBlocks(keylessModel("bench-researcher", "bench"), () => [{ type: "text", text: FOUND }], { signal: options?.signal, chunkSize: 16 });

const lookup: AgentTool<any> = {
  name: "lookup",
  label: "lookup",
  description: "Looks up background.",
  parameters: { type: "object", properties: { query: { type: "string" } } },
  execute: async () => ({ content: [{ type: "text", text: FOUND }], details: {} }),
};

const unitsOf = (t: OperationUnits): Units => ({ reads: t.readUnits, writes: t.writeUnits, commands: t.commands });

export async function benchSubagentCosts(): Promise<void> {
  // The shared setup asks Local to report every single-item write's units (the meter takes them from it).
  const local = await meteredDynamo("sub");
  const { table, meter } = local;
  const probe = createDynamoClient(); // item sizes, unmetered
  const clock = new ManualClock(Date.now());
  const fifo: Doorbell[] = [];
  let rings = 0;
  const store = local.store(clock);
  // As the Lambda wiring builds it (default lease and flush policy); sweeps only when called.
  const runtime = createRuntime({
    agents: {
      // A day's budget: the hour's wait does not reach the parent's deadline (a wait ends there).
      lead: { initialize: () => ({ model: keylessModel("bench-parent", "bench"), streamFn: parentModel("task"), submissionTimeoutMs: 24 * HOUR_MS }) },
      solo: { initialize: () => ({ model: keylessModel("bench-parent", "bench"), streamFn: parentModel("lookup"), tools: [lookup] }) },
      researcher: { description: "Looks up background", initialize: () => ({ model: keylessModel("bench-researcher", "bench"), streamFn: researcherModel }) },
    },
    subagents: { lead: ["researcher"] },
    store,
    clock,
    queue: { ring: async (d) => void (rings++, fifo.push(d)) },
    flushPolicy: RUNTIME_DEFAULTS.flushPolicy,
    sweepIntervalMs: HOUR_MS,
  });
  const measure = async (op: () => Promise<unknown>): Promise<Units> => {
    meter.reset();
    await op();
    return unitsOf(meter.snapshot().total);
  };
  const deliver = async (submissionId: string): Promise<void> => {
    const i = fifo.findIndex((d) => d.submissionId === submissionId);
    if (i < 0) throw new Error(`no doorbell for ${submissionId}`);
    await runtime.handleDoorbell(fifo.splice(i, 1)[0]!);
  };
  const childOf = async (parentId: string): Promise<string> => {
    const children = await store.listChildSubmissions(parentId);
    if (children.length !== 1) throw new Error(`expected one child of ${parentId}, found ${children.length}`);
    return children[0]!.id;
  };
  try {
    // ---- one spawn + wake ----
    const phases = { admission: zeroUnits(), spawn: zeroUnits(), child: zeroUnits(), resume: zeroUnits(), solo: zeroUnits() };
    const byOperation = new Map<string, OperationUnits>();
    const ringsBefore = rings;
    for (let run = 0; run < RUNS; run++) {
      const address = { agent: "lead", instance: `flow-${run}`, message: { kind: "user" as const, body: "Triage: the export fails." } };
      let parentId = "";
      addUnits(phases.admission, await measure(async () => void (parentId = (await runtime.dispatch(address)).submissionId)));
      addUnits(phases.spawn, await measure(() => deliver(parentId)));
      const childId = await childOf(parentId);
      addUnits(phases.child, await measure(() => deliver(childId)));
      collect(byOperation, meter.snapshot().byOperation);
      addUnits(phases.resume, await measure(() => deliver(parentId)));
      collect(byOperation, meter.snapshot().byOperation);
      if (fifo.length > 0) throw new Error(`doorbells left over: ${JSON.stringify(fifo)}`);
      const settled = await runtime.wait(parentId);
      if (settled.status !== "succeeded") throw new Error(`spawn + wake flow failed: ${JSON.stringify(settled)}`);
      // The same work with an in-process tool: one submission, admission included.
      addUnits(
        phases.solo,
        await measure(async () => {
          const { submissionId } = await runtime.dispatch({ ...address, agent: "solo" });
          await deliver(submissionId);
        }),
      );
    }
    const flowRings = (rings - ringsBefore) / RUNS - 1; // less the in-process comparison's one
    const mean = (u: Units): Units => ({ reads: u.reads / RUNS, writes: u.writes / RUNS, commands: u.commands / RUNS });
    const flow = mean(sumUnits(phases.admission, phases.spawn, phases.child, phases.resume));
    const solo = mean(phases.solo);
    console.log(
      `durable subagents (issue 10): DynamoDB units on DynamoDB Local, transactions computed from item sizes (bench/dynamo-units.ts); ` +
        `a parent whose one task call spawns a child that answers ${FOUND.length} B; means of ${RUNS} flows:`,
    );
    figure("write units of one spawn + wake (parent admission, spawn and park, child run + settlement + wake, parent resume + settlement)", flow.writes, "");
    figure("read units of one spawn + wake", flow.reads, "");
    for (const [name, u] of Object.entries(phases).filter(([n]) => n !== "solo")) {
      const m = mean(u);
      note(`  ${PHASE_NAMES[name]!.padEnd(64)} ${m.writes.toFixed(1).padStart(5)} WU ${m.reads.toFixed(1).padStart(5)} RU ${m.commands.toFixed(0).padStart(3)} requests`);
    }
    note(`  the same work by an in-process tool in one submission: ${solo.writes.toFixed(1)} WU, ${solo.reads.toFixed(1)} RU, ${solo.commands.toFixed(0)} requests`);
    figure("extra write units of going durable (spawn + wake − in-process tool)", flow.writes - solo.writes, "");
    figure("extra read units of going durable", flow.reads - solo.reads, "");
    measured.childWriteUnits = Math.round((flow.writes - solo.writes) * 10) / 10;
    measured.childReadUnits = Math.round((flow.reads - solo.reads) * 10) / 10;
    note(`  doorbells (worker invocations) per flow: ${flowRings.toFixed(0)}: the parent twice, the child once (the in-process tool: 1)`);
    note(
      `  the child's run + the parent's resume by store operation (per flow; calls, WU, RU): ` +
        [...byOperation]
          .filter(([, op]) => op.writeUnits + op.readUnits > 0)
          .sort((a, b) => b[1].writeUnits - a[1].writeUnits)
          .map(([n, op]) => `${n} ${(op.calls / RUNS).toFixed(0)}/${(op.writeUnits / RUNS).toFixed(1)}/${(op.readUnits / RUNS).toFixed(1)}`)
          .join(", "),
    );
    figure("DynamoDB $ per 1,000 spawn + wake flows", (1000 * (flow.writes * PRICES.dynamoWriteMillion + flow.reads * PRICES.dynamoReadMillion)) / 1e6, "$", undefined, 4);

    // ---- a parent waiting an hour ----
    // Sweeps once a minute for an hour, each metered alone (its report says whether it checked a wait).
    const sweepHour = async (): Promise<{ sweeps: Array<{ units: Units; checked: boolean }>; rung: Doorbell[]; byOperation: Map<string, OperationUnits> }> => {
      const rung = fifo.length;
      const sweeps: Array<{ units: Units; checked: boolean }> = [];
      const byOperation = new Map<string, OperationUnits>();
      for (let t = 0; t < HOUR_MS; t += SWEEP_EVERY_MS) {
        await clock.advance(SWEEP_EVERY_MS);
        meter.reset();
        const report = await runtime.sweep({ staleQueuedMs: 60_000 });
        const snapshot = meter.snapshot();
        sweeps.push({ units: unitsOf(snapshot.total), checked: report.waitChecks + report.expiredWaits > 0 });
        collect(byOperation, snapshot.byOperation);
      }
      return { sweeps, rung: fifo.splice(rung), byOperation };
    };
    // The baseline hour has one submission running elsewhere too (as the child will be), so the
    // difference is the waiting parent's alone, not its child's lease.
    const other = await runtime.dispatch({ agent: "solo", instance: "other", message: { kind: "user", body: "Triage: the export fails." } });
    fifo.splice(fifo.findIndex((d) => d.submissionId === other.submissionId), 1);
    await store.claimSubmission({ submissionId: other.submissionId, attemptId: "bench-other", ownerId: "bench: running for an hour", leaseExpiresAt: clock.now() + 4 * HOUR_MS });
    const baseline = await sweepHour();
    await store.reserveSettlement(other.submissionId, "bench-other");
    await store.finalizeSettlement(other.submissionId);

    const waitAddress = { agent: "lead", instance: "idle", message: { kind: "user" as const, body: "Triage: the export fails." } };
    const { submissionId: parentId, conversationId } = await runtime.dispatch(waitAddress);
    await deliver(parentId);
    const childId = await childOf(parentId);
    // The child runs elsewhere for the hour (a worker holding its lease; its renewals are its own cost).
    fifo.splice(fifo.findIndex((d) => d.submissionId === childId), 1);
    await store.claimSubmission({ submissionId: childId, attemptId: "bench-child", ownerId: "bench: a child running for an hour", leaseExpiresAt: clock.now() + 4 * HOUR_MS });
    const parked = await store.getSubmission(parentId);
    if (parked.status !== "waiting" || parked.leaseExpiresAt !== undefined) throw new Error(`parent not parked: ${JSON.stringify(parked)}`);

    // The first hour after the park (its wait checks come early in it), then an hour with no sweep.
    const waiting = await sweepHour();
    const quiet = await measure(() => clock.advance(HOUR_MS));
    if ((await store.getSubmission(parentId)).status !== "waiting") throw new Error("the parent stopped waiting within the hour");
    const own = waiting.rung.filter((d) => d.submissionId === parentId).length;
    const perSweep = sumUnits(...baseline.sweeps.map((s) => s.units));
    const perBaseSweep = { reads: perSweep.reads / baseline.sweeps.length, writes: perSweep.writes / baseline.sweeps.length, commands: perSweep.commands / baseline.sweeps.length };
    const beyondBaseline = (sweeps: Array<{ units: Units }>): Units => {
      const t = sumUnits(...sweeps.map((s) => s.units));
      return {
        reads: t.reads - sweeps.length * perBaseSweep.reads,
        writes: t.writes - sweeps.length * perBaseSweep.writes,
        commands: t.commands - sweeps.length * perBaseSweep.commands,
      };
    };
    const checks = waiting.sweeps.filter((s) => s.checked);
    const idle = beyondBaseline(waiting.sweeps.filter((s) => !s.checked));
    const checking = beyondBaseline(checks);
    const extra = beyondBaseline(waiting.sweeps);
    const bytes = await itemBytesOf(probe, table, [submissionPk(parentId), sessionPk({ agent: "lead", instance: "idle", session: "default" }), conversationPk(conversationId)]);
    const storagePerHour = ((bytes / 1e9) * (PRICES.dynamoStorageGbMonth + PRICES.dynamoPitrGbMonth)) / (30 * 24);
    const requestsPerHour = (extra.reads * PRICES.dynamoReadMillion + extra.writes * PRICES.dynamoWriteMillion) / 1e6;

    console.log("a parent waiting an hour for its child (manual clock; the child holds its own lease meanwhile; the parent's budget is a day):");
    figure("doorbells of the parent's own in the hour (queue messages = worker invocations)", own, "", TARGET.parentDoorbells, 0);
    figure("DynamoDB requests in an hour with no sweep running (no lease, heartbeat or timer of the parent's)", quiet.commands, "", atMost(0, ""), 0);
    figure(
      `read units the waiting parent adds to the ${waiting.sweeps.length - checks.length} sweeps that do not check it (its row is not due: the sweep's index query only)`,
      idle.reads,
      "",
      TARGET.idleSweepReads,
    );
    figure(`wait checks in the first hour after the park (sweeps at 1 min; the lost-wake backstop, backing off)`, checks.length, "", undefined, 0);
    note(
      `  they read ${checking.reads.toFixed(1)} RU and write ${checking.writes.toFixed(1)} WU in all (${checking.commands.toFixed(0)} requests): the due parent's row (listDueWaits), ` +
        `its pending child's (getSubmission), and the next check pushed later (postponeWaitCheck); an hour of sweeps without the parent: ` +
        `${perSweep.commands} requests, ${perSweep.reads.toFixed(1)} RU`,
    );
    note(
      "  by store operation (calls, RU, WU; with the parent − without): " +
        [...waiting.byOperation]
          .map(([n, op]) => {
            const b = baseline.byOperation.get(n);
            return [n, op.calls - (b?.calls ?? 0), op.readUnits - (b?.readUnits ?? 0), op.writeUnits - (b?.writeUnits ?? 0)] as const;
          })
          .filter(([, c, r, w]) => c !== 0 || r !== 0 || w !== 0)
          .map(([n, c, r, w]) => `${n} ${c}/${r.toFixed(1)}/${w.toFixed(1)}`)
          .join(", "),
    );
    figure("DynamoDB $ of the hour's checks", requestsPerHour, "$", undefined, 7);
    const [inADay, inAMonth] = [24 * HOUR_MS, 30 * 24 * HOUR_MS].map((span) => waitChecksWithin(span, RUNTIME_DEFAULTS.leaseMs));
    note(
      `  later hours cost less: each check pushes the next one out by the wait's age (at most a day apart): ` +
        `${inADay} checks in a day of waiting, ${inAMonth} in 30 days (the same rule, sweeps at 1 min)`,
    );
    figure(`storage of the parent's items (${bytes} B: rows, session, log), $ per hour with PITR`, storagePerHour, "$", undefined, 9);
    figure("idle cost of a parent waiting an hour (its checks + storage)", requestsPerHour + storagePerHour, "$", undefined, 7);
    note(`  compute and queue: $0 (no worker invocation, no message of the parent's); prices: ${PRICE_NOTE}`);
  } finally {
    await runtime.close();
    local.close();
    probe.destroy();
  }
}

const PHASE_NAMES: Record<string, string> = {
  admission: "the parent's admission (dispatch)",
  spawn: "its first run: claim, turn, the child's admission, task_spawned, park",
  child: "the child: claim, turn, settlement, the wake (outcome + requeue)",
  resume: "the parent's resume: claim (no attempt), rebuild, turn, settlement",
};

/** Wait checks a parent parked at 0 gets within `span`, swept once a minute (the engine's rule). */
function waitChecksWithin(span: number, settlementGraceMs: number): number {
  let due = firstWaitCheckAt(0, settlementGraceMs);
  let checks = 0;
  for (let now = SWEEP_EVERY_MS; now <= span; now += SWEEP_EVERY_MS) {
    if (due > now) continue;
    checks++;
    due = nextWaitCheckAt(now, 0, settlementGraceMs);
  }
  return checks;
}

function collect(into: Map<string, OperationUnits>, from: Map<string, OperationUnits>): void {
  for (const [name, op] of from) {
    const acc = into.get(name) ?? { calls: 0, commands: 0, localReadUnits: 0, readUnits: 0, localWriteUnits: 0, writeUnits: 0, refused: 0 };
    for (const k of Object.keys(acc) as (keyof OperationUnits)[]) acc[k] += op[k];
    into.set(name, acc);
  }
}

