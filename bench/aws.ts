/**
 * The serverless shape's costs and delays, on this machine:
 *
 * - DynamoDB read and write units per assistant turn (a user message, one tool call, ~2 KB of
 *   streamed text) through a runtime on the DynamoDB store against DynamoDB Local, as Local
 *   reports them (`countConsumedCapacity`) and with transactions computed from item sizes (Local
 *   under-counts them); the dollars per 1,000 turns at on-demand prices, the model excluded
 * - the delay from a record's append (by a worker) to an SSE client of the http function, on the
 *   local cloud (`npm run dev:aws`'s pieces: emulators, streaming function URL, SQS-fed workers)
 * - the minified bundle of each Lambda (the construct's esbuild options: entry chunk, what a cold
 *   start loads, all chunks) and its cold module-load time on Node 22, as deployed and with `--enable-source-maps`
 * - the monthly cost of a deployment nobody uses
 * - the units of the review's cost findings (`review-costs.ts`: a manual compaction among them) and
 *   of a cancel (`cancel-costs.ts`)
 * - cancel → stop of a running reply on the local cloud, p50/p99 (`cancel-stop.ts`)
 * - 100 concurrent admissions into one session: admitted, latency, retries (`hot-session.ts`)
 * - lean history: storage per turn and replay read units before and after folding (`lean-history.ts`)
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateQueueCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { AgentTool, StreamFn } from "@earendil-works/pi-agent-core";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { drainDeadLetters } from "../src/sqs/dead-letter-drain.ts";
import { createRuntime, type Runtime } from "../src/runtime/runtime.ts";
import { keylessModel, streamBlocks } from "../src/agent/block-stream.ts";
import { RUNTIME_DEFAULTS } from "../src/runtime/defaults.ts";
import { startEmulators } from "../test/support/emulators.ts";
import { meteredDynamo } from "./dynamo-units.ts";
import { BenchClient, runConcurrently } from "./http-client.ts";
import { printIdleCost } from "./idle-cost.ts";
import { benchReviewCosts } from "./review-costs.ts";
import { benchCancelCosts } from "./cancel-costs.ts";
import { benchCancelStop } from "./cancel-stop.ts";
import { benchHotSession } from "./hot-session.ts";
import { benchSubagentCosts } from "./subagent-costs.ts";
import { benchApprovalCosts } from "./approval-costs.ts";
import { benchLeanHistory } from "./lean-history.ts";
import { bundleLambdas, coldLoadMs, type LambdaBundle, removeBundles, topInputs } from "./lambda-bundles.ts";
import { measured } from "./measured.ts";
import { PRICES, PRICE_NOTE } from "./prices.ts";
import { atMost, figure, note } from "./report.ts";
import { median, percentile } from "./stats.ts";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** Submissions measured per shape. */
const RUNS = 5;
/** Assistant turns in the long run (the per-turn figure is the difference to a run of one). */
const LONG_RUN_TURNS = 6;
/** ~2 KB of reply text. */
const REPLY = Array.from({ length: 32 }, (_, i) => `Line ${String(i).padStart(2, "0")}: the harness keeps a durable log.\n`)
  .join("")
  .slice(0, 2048)
  .padEnd(2048, ".");
const TOOL_RESULT = "result: ".padEnd(200, "r");
const SSE_REPLIES = 100;
const SSE_CLIENTS = 4;
const LOAD_RUNS = 5;

const TARGET = {
  writeUnitsPerTurn: atMost(10, ""),
  sseP50: atMost(250, " ms"),
  sseP99: atMost(1000, " ms"),
  httpBundle: atMost(1.5, " MB"),
  workerBundle: atMost(3, " MB"),
  load: atMost(250, " ms"),
};

export async function benchAws(): Promise<void> {
  await bundles();
  const emulators = await startEmulators();
  Object.assign(process.env, emulators.env);
  try {
    note(`emulators up in ${emulators.startupMs} ms (DynamoDB Local ${emulators.env.AWS_ENDPOINT_URL_DYNAMODB}, fauxqs)`);
    const sweep = await unitsPerTurn();
    await benchReviewCosts();
    await benchCancelCosts();
    await benchSubagentCosts();
    await benchApprovalCosts();
    await benchLeanHistory();
    await benchHotSession();
    await sseDelay();
    await benchCancelStop();
    console.log("idle cost of a deployment nobody uses (per month, construct defaults):");
    const idle = printIdleCost({ ...sweep, drainMs: await emptyDrainMs() });
    figure("idle cost per month (list prices, construct defaults)", idle, "$", atMost(0.5, " $"), 2);
    measured.idlePerMonth = idle;
    measured.sweepReadUnits = sweep.sweepReadUnits;
  } finally {
    await emulators.stop();
  }
}

// ---- DynamoDB units per turn ----

/**
 * A keyless model: `turns` assistant turns of ~2 KB of text and one tool call each (the next
 * one after the tool's outcome), then a short final answer.
 */
function turnModel(plan: { delayMs: number; turns: number }): { model: ReturnType<typeof keylessModel>; streamFn: StreamFn } {
  const model = keylessModel("bench-turn", "bench");
  const streamFn: StreamFn = (m, context, options) => {
    // Tool outcomes since this submission's question (the context holds the whole conversation).
    const lastUser = context.messages.findLastIndex((msg) => msg.role === "user");
    const done = context.messages.slice(lastUser + 1).filter((msg) => msg.role === "toolResult").length;
    return streamBlocks(
      m,
      () =>
        done < plan.turns
          ? [
              { type: "text", text: REPLY },
              { type: "toolCall", id: `call_${context.messages.length}`, name: "lookup", arguments: { query: "durable logs" } },
            ]
          : [{ type: "text", text: "Done." }],
      { signal: options?.signal, chunkSize: 16, delayMs: plan.delayMs },
    );
  };
  return { model, streamFn };
}

const lookup: AgentTool<any> = {
  name: "lookup",
  label: "lookup",
  description: "Looks something up.",
  parameters: { type: "object", properties: { query: { type: "string" } } },
  execute: async () => ({ content: [{ type: "text", text: TOOL_RESULT }], details: {} }),
};

/** Median time of a dlq drain of an empty dead-letter queue on fauxqs (one short receive). */
async function emptyDrainMs(): Promise<number> {
  const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
  try {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `bench-dlq-${process.pid}.fifo`, Attributes: { FifoQueue: "true" } }),
    );
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await drainDeadLetters({
        client: sqs,
        queueUrl: QueueUrl!,
        visibilityTimeoutMs: 60_000,
        handle: async () => {},
        onError: () => {},
        shouldStop: () => false,
      });
      times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    sqs.destroy();
  }
}

async function unitsPerTurn(): Promise<{ sweepReadUnits: number; sweepCommands: number; sweepMs: number }> {
  const local = await meteredDynamo("turn");
  const { meter, counter } = local;
  const store = local.store();
  const plan = { delayMs: 0, turns: 1 };
  // The Lambda default; mutated below for the HARNESS_FLUSH_INTERVAL_MS figure (each attempt's
  // delta batcher reads this object).
  const flushPolicy = { ...RUNTIME_DEFAULTS.flushPolicy };
  // As the Lambda wiring builds it (default lease and flush policy); no background sweeps.
  const runtime = createRuntime({
    agents: {
      bench: {
        initialize: () => ({ ...turnModel(plan), systemPrompt: "You are a benchmark assistant.", tools: [lookup] }),
      },
    },
    store,
    flushPolicy,
    sweepIntervalMs: 3_600_000,
  });
  let question = 0;
  /** Mean units of `runs` submissions of `turns` tool turns each, in one conversation. */
  const measureRuns = async (turns: number, runs: number) => {
    plan.turns = turns;
    meter.reset();
    counter.reset();
    const kindsBefore = (await runtime.records(conversationId)).length;
    for (let i = 0; i < runs; i++) await runTurn(runtime, "units", `Question ${++question}: ${"q".repeat(80)}`);
    const snap = meter.snapshot();
    const kinds = new Map<string, number>();
    for (const r of (await runtime.records(conversationId)).slice(kindsBefore)) kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1 / runs);
    return {
      writes: snap.total.writeUnits / runs,
      reads: snap.total.readUnits / runs,
      localWrites: counter.writeUnits / runs,
      refused: snap.total.refused,
      byOperation: snap.byOperation,
      byItem: meter.writeUnitsByItem(),
      kinds,
      runs,
    };
  };
  let conversationId = "";
  try {
    await runtime.start();
    meter.reset();
    await runTurn(runtime, "units", "The conversation's first question.");
    const first = meter.snapshot().total;
    conversationId = (await runtime.conversation({ agent: "bench", instance: "units", session: "default" })).id;

    const one = await measureRuns(1, RUNS);
    const many = await measureRuns(LONG_RUN_TURNS, RUNS);
    const perTurn = {
      writes: (many.writes - one.writes) / (LONG_RUN_TURNS - 1),
      reads: (many.reads - one.reads) / (LONG_RUN_TURNS - 1),
    };

    console.log(
      `DynamoDB units (through a runtime on the DynamoDB store as the Lambda wiring builds it; flush policy 1 KB / 200 ms; ` +
        `an assistant turn = ${REPLY.length} B of text in 16 B deltas + 1 tool call + its ${TOOL_RESULT.length} B outcome):`,
    );
    figure(
      `write units per assistant turn (in a run of ${LONG_RUN_TURNS} turns vs runs of 1: (U${LONG_RUN_TURNS} − U1) / ${LONG_RUN_TURNS - 1}; means of ${RUNS} runs each)`,
      perTurn.writes,
      "",
      TARGET.writeUnitsPerTurn,
    );
    figure("read units per assistant turn", perTurn.reads, "");
    figure("write units per submission of one such turn + a short final answer (admission, claim, records, settlement)", one.writes, "");
    note(`  as DynamoDB Local reports them: ${one.localWrites.toFixed(1)} (Local counts equal-sized transaction items once; computed from item sizes above)`);
    figure("read units per submission of one turn (DynamoDB's 0.5/1 minimum per request applied)", one.reads, "");
    note(`  a run of ${LONG_RUN_TURNS} turns: ${many.writes.toFixed(1)} write, ${many.reads.toFixed(1)} read units; the conversation's very first submission: ${first.writeUnits} write, ${first.readUnits} read units`);
    if (one.refused + many.refused > 0) note(`  ${one.refused + many.refused} refused conditional writes (charged by DynamoDB, counted nowhere)`);
    note(
      `  rule check: ${meter.ruleChecks.agree} of ${meter.ruleChecks.total} single-item writes (which Local reports right) ` +
        `computed by the same size and index rules = Local's figure`,
    );
    note(`  per submission of ${LONG_RUN_TURNS} turns, by store operation (calls, write units computed / Local, read units):`);
    const per = (v: number) => v / many.runs;
    for (const [name, op] of [...many.byOperation].sort((a, b) => b[1].writeUnits - a[1].writeUnits)) {
      note(`    ${name.padEnd(20)} ${per(op.calls).toFixed(1).padStart(5)} calls  ${per(op.writeUnits).toFixed(1).padStart(5)} / ${per(op.localWriteUnits).toFixed(1).padStart(5)} WU  ${per(op.readUnits).toFixed(1).padStart(5)} RU`);
    }
    note(
      `  where they go — write units per submission of ${LONG_RUN_TURNS} turns by item written (transactions doubled, index entries included): ` +
        [...many.byItem].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${per(v).toFixed(1)}`).join(", "),
    );
    note(`  records per submission of ${LONG_RUN_TURNS} turns: ` + [...many.kinds].map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", "));
    figure("DynamoDB $ per 1,000 assistant turns (model excluded)", costPer1000(perTurn.writes, perTurn.reads), "$", undefined, 4);
    measured.submissionWriteUnits = round1(one.writes);
    measured.submissionReadUnits = round1(one.reads);
    measured.deltaWriteUnitsUnpaced = round1(perTurn.writes);
    figure("DynamoDB $ per 1,000 submissions of one turn", costPer1000(one.writes, one.reads), "$", undefined, 4);
    note(`  at $${PRICES.dynamoWriteMillion}/M write and $${PRICES.dynamoReadMillion}/M read request units (${PRICE_NOTE})`);

    // A model streaming at ~100 tokens/s: the 200 ms flush cuts the text into many small records.
    plan.delayMs = 40;
    for (const intervalMs of [RUNTIME_DEFAULTS.flushPolicy.intervalMs, 1000]) {
      flushPolicy.intervalMs = intervalMs;
      const pacedOne = await measureRuns(1, 1);
      const pacedTwo = await measureRuns(2, 1);
      const pacedTurn = pacedTwo.writes - pacedOne.writes;
      const appends = (pacedTwo.byOperation.get("appendRecords")?.calls ?? 0) - (pacedOne.byOperation.get("appendRecords")?.calls ?? 0);
      if (intervalMs === RUNTIME_DEFAULTS.flushPolicy.intervalMs) measured.deltaWriteUnitsPaced = round1(pacedTurn);
      note(
        `  model streaming at ~400 B/s (16 B every 40 ms, ~100 tokens/s), flush every ${intervalMs} ms` +
          `${intervalMs === RUNTIME_DEFAULTS.flushPolicy.intervalMs ? " (default)" : " (HARNESS_FLUSH_INTERVAL_MS)"}: ` +
          `${pacedTurn.toFixed(1)} write units per assistant turn (${appends} appends), ` +
          `$${costPer1000(pacedTurn, pacedTwo.reads - pacedOne.reads).toFixed(4)} per 1,000 turns`,
      );
    }
    flushPolicy.intervalMs = RUNTIME_DEFAULTS.flushPolicy.intervalMs;

    // One sweep of a table with nothing to do: what the sweeper costs every minute.
    const sweepMs: number[] = [];
    meter.reset();
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await runtime.sweep({ staleQueuedMs: 60_000 });
      sweepMs.push(performance.now() - t0);
    }
    const sweep = meter.snapshot().total;
    return { sweepReadUnits: sweep.readUnits / 5, sweepCommands: sweep.commands / 5, sweepMs: median(sweepMs) };
  } finally {
    await runtime.close();
    local.close();
  }
}

async function runTurn(runtime: Runtime, instance: string, body: string): Promise<void> {
  const { submissionId } = await runtime.dispatch({ agent: "bench", instance, message: { kind: "user", body } });
  const payload = await runtime.wait(submissionId);
  if (payload.status !== "succeeded") throw new Error(`turn failed: ${JSON.stringify(payload)}`);
}

const round1 = (v: number) => Math.round(v * 10) / 10;

function costPer1000(writeUnits: number, readUnits: number): number {
  return (1000 * (writeUnits * PRICES.dynamoWriteMillion + readUnits * PRICES.dynamoReadMillion)) / 1e6;
}


// ---- append → SSE on the local cloud ----

async function sseDelay(): Promise<void> {
  const logs: string[] = [];
  const cloud = await startLocalCloud({
    assembly: exampleAssembly(resolve(ROOT, "examples/basic/agents.ts")).dir,
    name: `bench-${process.pid}`,
    workers: 2,
    sweeperRateMs: false,
    log: (line, source) => logs.push(`[${source}] ${line}`),
    onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
  });
  const client = new BenchClient(cloud.url);
  try {
    await runConcurrently(5, 1, () => sseSample(client));
    const firsts: number[] = [];
    const all: number[] = [];
    let late = 0;
    await runConcurrently(SSE_REPLIES, SSE_CLIENTS, async () => {
      const s = await sseSample(client);
      if (!s) late++;
      else {
        firsts.push(s.first);
        all.push(...s.all);
      }
    });
    console.log(
      `record append (worker) → SSE client of the http function, local cloud (DynamoDB Local + fauxqs, ${SSE_CLIENTS} clients, ` +
        `${firsts.length} replies; the stream polls the table: 250 ms backing off to 1 s):`,
    );
    figure("p50 (first record a worker appends per reply)", percentile(firsts, 50), "ms", TARGET.sseP50, 0);
    figure("p99", percentile(firsts, 99), "ms", TARGET.sseP99, 0);
    note(`  every worker record (${all.length}): p50 ${percentile(all, 50).toFixed(0)} ms, p99 ${percentile(all, 99).toFixed(0)} ms`);
    if (late > 0) note(`  (${late} replies left out: the stream attached after the worker's first append)`);
  } catch (err) {
    process.stderr.write(`--- local cloud output (last 40 lines) ---\n${logs.slice(-40).join("\n")}\n`);
    throw err;
  } finally {
    client.close();
    await cloud.stop();
  }
}

/** Delays of one reply's worker records (append time → arrival), or undefined if attached late. */
async function sseSample(client: BenchClient): Promise<{ first: number; all: number[] } | undefined> {
  const instance = `sse-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const path = `/agents/assistant/${instance}`;
  const posted = await client.post(path, { kind: "user", body: "hello there" });
  if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
  const delays: { time: number; delay: number }[] = [];
  const read = await client.stream(path, (f) => {
    if (f.event.startsWith("assistant_") || f.event === "submission_settled") {
      const time = Date.parse((JSON.parse(f.data) as { time: string }).time);
      delays.push({ time, delay: performance.timeOrigin + f.at - time });
    }
    return f.event === "submission_settled";
  });
  if (!read.done || delays.length === 0) throw new Error(`stream of ${instance} ended (${read.status}) before submission_settled`);
  if (performance.timeOrigin + read.headersAt > delays[0]!.time) return undefined;
  return { first: delays[0]!.delay, all: delays.map((d) => d.delay) };
}

// ---- bundles ----

async function bundles(): Promise<void> {
  const built = await bundleLambdas();
  const keyless = await bundleLambdas(resolve(ROOT, "bench/keyless-agents.ts"));
  try {
    printBundles(built, keyless);
  } finally {
    removeBundles([...built, ...keyless]);
  }
}

function printBundles(built: LambdaBundle[], keyless: LambdaBundle[]): void {
  console.log(
    "Lambda bundles (the construct's esbuild options, src/cdk/lambda-bundling.ts: node22 ESM, minified, code splitting; " +
      "#harness-agents = examples/basic/agents.ts for worker and dlq, agent names only for http and sweeper); " +
      `bundle = the entry chunk; module load = import of the bundle in a fresh Node 22 process, median of ${LOAD_RUNS}:`,
  );
  for (const b of built) {
    const mb = b.bytes / 1e6;
    const target = b.role === "http" ? TARGET.httpBundle : b.role === "worker" ? TARGET.workerBundle : undefined;
    const fits = figure(`${b.role} bundle`, mb, "MB", target, 2);
    note(
      `  cold start loads ${(b.loadBytes / 1e6).toFixed(2)} MB (entry + its static chunks); ` +
        `all chunks ${(b.totalBytes / 1e6).toFixed(2)} MB in ${b.chunks} files; source maps ${(b.mapBytes / 1e6).toFixed(2)} MB`,
    );
    const load = coldLoadMs(b, LOAD_RUNS, false);
    const nodeMaps = coldLoadMs(b, LOAD_RUNS, true);
    figure(`${b.role} cold module load (the construct's default: maps beside the bundle, read when a stack is formatted)`, load, "ms", TARGET.load, 0);
    figure(`${b.role} cold module load with --enable-source-maps (Node reads every map at load: before ADR 0037)`, nodeMaps, "ms", undefined, 0);
    if (!fits || load > TARGET.load.value) {
      const k = keyless.find((x) => x.role === b.role)!;
      note(`  largest inputs loaded at cold start: ${topInputs(b).map((i) => `${i.name} ${(i.bytes / 1024).toFixed(0)} KB`).join(", ")}`);
      note(
        `  with keyless agents (no provider SDKs: bench/keyless-agents.ts): ${(k.bytes / 1e6).toFixed(2)} MB, ` +
          `module load ${coldLoadMs(k, LOAD_RUNS, false).toFixed(0)} ms`,
      );
    }
  }
}
