/**
 * Tool approval's costs (issue 22, ADR 0025) on the DynamoDB store against DynamoDB Local, through
 * a runtime as the Lambda wiring builds it, with the doorbells captured (each one delivered is one
 * worker invocation) and a manual clock:
 *
 * - the read and write units of one approval round trip: the admission, the run that asks
 *   (`approval_requested`) and parks, the decision's guarded write (`approval_decided`, requeue),
 *   and the resume that runs the tool and settles; beside the same tool run without approval;
 * - a submission waiting a day for a person: its doorbells (worker invocations, queue messages),
 *   the DynamoDB units its wait adds to a day of sweeps (once a minute, as the construct
 *   schedules them) against sweeps with nothing waiting, and its items' storage; priced.
 */
import { defineTool } from "../src/agent/define-tool.ts";
import * as schema from "../src/agent/tool-schema.ts";
import { keylessModel, streamBlocks, type StreamBlock } from "../src/agent/block-stream.ts";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { ManualClock } from "../src/ports/clock.ts";
import type { Doorbell } from "../src/ports/queue.ts";
import { RUNTIME_DEFAULTS } from "../src/runtime/defaults.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { conversationPk, sessionPk, submissionPk } from "../src/dynamodb/keys.ts";
import { createDynamoClient } from "../src/dynamodb/index.ts";
import { addUnits, itemBytesOf, meteredDynamo, type OperationUnits, sumUnits, type Units, zeroUnits } from "./dynamo-units.ts";
import { PRICES, PRICE_NOTE } from "./prices.ts";
import { atMost, figure, note } from "./report.ts";

const RUNS = 3;
const SWEEP_EVERY_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const unitsOf = (t: OperationUnits): Units => ({ reads: t.readUnits, writes: t.writeUnits, commands: t.commands });

/** The model: a `refund` call, then a line quoting its outcome. */
const model: StreamFn = (m, context, options) =>
  streamBlocks(
    m,
    (): StreamBlock[] => {
      const lastUser = context.messages.findLastIndex((x) => x.role === "user");
      const result = context.messages.slice(lastUser + 1).find((x) => x.role === "toolResult");
      if (result === undefined) return [{ type: "toolCall", id: `call_${lastUser}`, name: "refund", arguments: { amount: 240 } }];
      return [{ type: "text", text: `Done: ${result.content.map((c) => (c.type === "text" ? c.text : "")).join("")}` }];
    },
    { signal: options?.signal, chunkSize: 16 },
  );

const refund = (needsApproval: boolean) =>
  defineTool({
    name: "refund",
    label: "Refund",
    description: "Refund an amount in dollars.",
    parameters: schema.obj({ amount: schema.num() }),
    needsApproval,
    execute: async (_id, { amount }) => ({ content: [{ type: "text", text: `refunded $${amount}` }], details: { amount } }),
  });

export async function benchApprovalCosts(): Promise<void> {
  const local = await meteredDynamo("approvals");
  const { table, meter } = local;
  const probe = createDynamoClient();
  const clock = new ManualClock(Date.now());
  const fifo: Doorbell[] = [];
  const store = local.store(clock);
  // The wait must outlast the day measured: approvals expire after 2 days, budgets after 3.
  const setup = (needsApproval: boolean) => () => ({
    model: keylessModel("bench-support", "bench"),
    streamFn: model,
    tools: [refund(needsApproval)],
    approvalTimeoutMs: 2 * DAY_MS,
    submissionTimeoutMs: 3 * DAY_MS,
  });
  const runtime = createRuntime({
    agents: { support: { initialize: setup(true) }, plain: { initialize: setup(false) } },
    store,
    clock,
    queue: { ring: async (d) => void fifo.push(d) },
    flushPolicy: RUNTIME_DEFAULTS.flushPolicy,
    sweepIntervalMs: DAY_MS,
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
  try {
    // ---- one approval round trip ----
    const phases = { admission: zeroUnits(), ask: zeroUnits(), decision: zeroUnits(), resume: zeroUnits(), plain: zeroUnits() };
    for (let run = 0; run < RUNS; run++) {
      const instance = `trip-${run}`;
      const message = { kind: "user" as const, body: "refund 240" };
      let id = "";
      addUnits(phases.admission, await measure(async () => void (id = (await runtime.dispatch({ agent: "support", instance, message })).submissionId)));
      addUnits(phases.ask, await measure(() => deliver(id)));
      const parked = await store.getSubmission(id);
      if (parked.status !== "waiting" || parked.leaseExpiresAt !== undefined) throw new Error(`not parked: ${JSON.stringify(parked)}`);
      addUnits(phases.decision, await measure(() => runtime.decide({ agent: "support", instance, submissionId: id, callId: "call_1", approved: true })));
      addUnits(phases.resume, await measure(() => deliver(id)));
      const settled = await runtime.wait(id);
      if (settled.status !== "succeeded") throw new Error(`round trip failed: ${JSON.stringify(settled)}`);
      addUnits(
        phases.plain,
        await measure(async () => {
          const { submissionId } = await runtime.dispatch({ agent: "plain", instance, message });
          await deliver(submissionId);
        }),
      );
    }
    if (fifo.length > 0) throw new Error(`doorbells left over: ${JSON.stringify(fifo)}`);
    const mean = (u: Units): Units => ({ reads: u.reads / RUNS, writes: u.writes / RUNS, commands: u.commands / RUNS });
    const trip = mean(sumUnits(phases.admission, phases.ask, phases.decision, phases.resume));
    const plain = mean(phases.plain);
    console.log(`tool approval (issue 22): DynamoDB units on DynamoDB Local (bench/dynamo-units.ts); a refund call that needs approval, approved; means of ${RUNS}:`);
    figure("write units of one approval round trip (admission, ask + park, decision, resume + tool + settlement)", trip.writes, "");
    figure("read units of one approval round trip", trip.reads, "");
    for (const [name, u] of Object.entries(phases).filter(([n]) => n !== "plain")) {
      const m = mean(u);
      note(`  ${PHASE_NAMES[name]!.padEnd(72)} ${m.writes.toFixed(1).padStart(5)} WU ${m.reads.toFixed(1).padStart(5)} RU ${m.commands.toFixed(0).padStart(3)} requests`);
    }
    note(`  the same refund without approval, one submission: ${plain.writes.toFixed(1)} WU, ${plain.reads.toFixed(1)} RU, ${plain.commands.toFixed(0)} requests`);
    figure("extra write units of asking a person (round trip − no approval)", trip.writes - plain.writes, "");
    figure("DynamoDB $ per 1,000 approval round trips", (1000 * (trip.writes * PRICES.dynamoWriteMillion + trip.reads * PRICES.dynamoReadMillion)) / 1e6, "$", undefined, 4);

    // ---- a submission waiting a day for a person ----
    const sweepFor = async (span: number): Promise<{ total: Units; sweeps: number; checks: number }> => {
      const out = { total: zeroUnits(), sweeps: 0, checks: 0 };
      for (let t = 0; t < span; t += SWEEP_EVERY_MS) {
        await clock.advance(SWEEP_EVERY_MS);
        meter.reset();
        const report = await runtime.sweep({ staleQueuedMs: 60_000 });
        addUnits(out.total, unitsOf(meter.snapshot().total));
        out.sweeps++;
        if (report.waitChecks + report.expiredWaits > 0) out.checks++;
      }
      return out;
    };
    const baseline = await sweepFor(HOUR_MS);
    const perBase = { reads: baseline.total.reads / baseline.sweeps, writes: baseline.total.writes / baseline.sweeps, commands: baseline.total.commands / baseline.sweeps };
    const { submissionId, conversationId } = await runtime.dispatch({ agent: "support", instance: "day", message: { kind: "user", body: "refund 240" } });
    await deliver(submissionId);
    const ringsBefore = fifo.length;
    const day = await sweepFor(DAY_MS);
    const own = fifo.slice(ringsBefore).filter((d) => d.submissionId === submissionId).length;
    const still = await store.getSubmission(submissionId);
    if (still.status !== "waiting") throw new Error(`stopped waiting within the day: ${still.status}`);
    const extra = {
      reads: day.total.reads - day.sweeps * perBase.reads,
      writes: day.total.writes - day.sweeps * perBase.writes,
      commands: day.total.commands - day.sweeps * perBase.commands,
    };
    const bytes = await itemBytesOf(probe, table, [submissionPk(submissionId), sessionPk({ agent: "support", instance: "day", session: "default" }), conversationPk(conversationId)]);
    const storageDay = ((bytes / 1e9) * (PRICES.dynamoStorageGbMonth + PRICES.dynamoPitrGbMonth)) / 30;
    const requestsDay = (Math.max(0, extra.reads) * PRICES.dynamoReadMillion + Math.max(0, extra.writes) * PRICES.dynamoWriteMillion) / 1e6;
    console.log("a submission waiting a day for a person's decision (manual clock; sweeps once a minute):");
    figure("doorbells of its own in the day (queue messages = worker invocations)", own, "", atMost(0, ""), 0);
    figure("sweeps that checked its wait (the lost-wake backstop, backing off)", day.checks, "", undefined, 0);
    note(
      `  its wait added ${extra.reads.toFixed(1)} RU, ${extra.writes.toFixed(1)} WU and ${extra.commands.toFixed(0)} requests to ${day.sweeps} sweeps ` +
        `(a sweep with nothing waiting: ${perBase.commands.toFixed(1)} requests, ${perBase.reads.toFixed(1)} RU)`,
    );
    figure(`storage of its items (${bytes} B: row, call wait, session, log), $ per day with PITR`, storageDay, "$", undefined, 9);
    figure("cost of a submission waiting a day for a person (its checks + storage)", requestsDay + storageDay, "$", undefined, 7);
    note(`  compute and queue: $0 (no worker invocation, no message of its own); prices: ${PRICE_NOTE}`);
  } finally {
    await runtime.close();
    local.close();
    probe.destroy();
  }
}

const PHASE_NAMES: Record<string, string> = {
  admission: "the admission (dispatch)",
  ask: "its first run: claim, turn, approval_requested (registers the call wait), park",
  decision: "the decision: one guarded write (approval_decided, answer, requeue) + doorbell",
  resume: "the resume: claim, tool_started, the tool, its outcome, turn, settlement",
};


