/**
 * Worker scaling on the local cloud (issue 13): 1,000 sessions with two submissions each admitted
 * through the http function at once, then the submissions settled per second by the worker
 * containers (the SQS event source's pollers, one invocation at a time each, as Lambda's
 * concurrency) over a fixed window while the backlog lasts, with 1 worker and with 2. The model
 * answers after a fixed latency (`bench/scaling-agents.ts`): a worker mostly waits on it. Order:
 * every session's log holds its first submission's records, settlement included, before any
 * record of its second.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import type { ConversationRecord } from "../src/protocol/records.ts";
import { createDynamoStore } from "../src/dynamodb/index.ts";
import { startEmulators } from "../test/support/emulators.ts";
import { BenchClient, runConcurrently } from "./http-client.ts";
import { atLeast, figure, note } from "./report.ts";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 1000);
const MODEL_LATENCY_MS = Number(process.env.BENCH_MODEL_LATENCY_MS ?? 1000);
/** The measured window, after every submission was admitted. */
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 60_000);
const ADMIT_CONCURRENCY = 16;

interface Run {
  workers: number;
  perSecond: number;
  settledInWindow: number;
  admitMs: number;
  outOfOrder: number;
  sessionsChecked: number;
}

export async function benchScaling(): Promise<void> {
  const emulators = await startEmulators();
  Object.assign(process.env, emulators.env);
  try {
    console.log(
      `worker scaling, local cloud (DynamoDB Local + fauxqs, ${SESSIONS} sessions × 2 submissions admitted at once, ` +
        `model latency ${MODEL_LATENCY_MS} ms, settlements per second over ${WINDOW_MS / 1000} s after admission):`,
    );
    const one = await run(1);
    const two = await run(2);
    for (const r of [one, two]) {
      note(
        `${r.workers} worker(s): ${r.perSecond.toFixed(2)} settlements/s (${r.settledInWindow} in the window; admission took ` +
          `${(r.admitMs / 1000).toFixed(1)} s); order: ${r.outOfOrder} of ${r.sessionsChecked} sessions out of order`,
      );
    }
    figure("throughput with 2 workers ÷ 1", two.perSecond / one.perSecond, "", atLeast(1.8), 2);
    figure("sessions whose submissions ran out of order", one.outOfOrder + two.outOfOrder, "", { op: "≤", value: 0 }, 0);
  } finally {
    await emulators.stop();
  }
}

async function run(workers: number): Promise<Run> {
  const logs: string[] = [];
  const cloud = await startLocalCloud({
    assembly: exampleAssembly(resolve(ROOT, "bench/scaling-agents.ts"), { "harness:agentNames": "scale" }).dir,
    name: `bench-scale-${workers}-${process.pid}`,
    workers,
    sweeperRateMs: false,
    functionEnv: { worker: { BENCH_MODEL_LATENCY_MS: String(MODEL_LATENCY_MS) } },
    log: (line, source) => logs.push(`[${source}] ${line}`),
    onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await cloud.stop();
  };
  const client = new BenchClient(cloud.url);
  const store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
  try {
    const instance = (i: number) => `s-${workers}-${i}`;
    const admitMs = await runConcurrently(SESSIONS, ADMIT_CONCURRENCY, async (i) => {
      for (const body of ["first", "second"]) {
        const posted = await client.post(`/agents/scale/${instance(i)}`, { kind: "user", body });
        if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
      }
    });
    const from = Date.now();
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const to = Date.now();
    await stop();

    let settledInWindow = 0;
    let outOfOrder = 0;
    await runConcurrently(SESSIONS, ADMIT_CONCURRENCY, async (i) => {
      const key = { agent: "scale", instance: instance(i), session: "default" };
      const { id } = await store.getConversation(key);
      const log = await store.readRecords(id);
      for (const r of log) {
        const at = Date.parse(r.time);
        if (r.kind === "submission_settled" && at >= from && at < to) settledInWindow++;
      }
      if (!inOrder(log)) outOfOrder++;
    });
    return { workers, perSecond: (settledInWindow * 1000) / (to - from), settledInWindow, admitMs, outOfOrder, sessionsChecked: SESSIONS };
  } catch (err) {
    process.stderr.write(`--- local cloud output (last 40 lines) ---\n${logs.slice(-40).join("\n")}\n`);
    throw err;
  } finally {
    client.close();
    await store.close?.();
    await stop();
  }
}

/** The records of each submission form one run, each run ends with its settlement (the last may be unfinished). */
function inOrder(log: readonly ConversationRecord[]): boolean {
  const closed = new Set<string>();
  let current: string | undefined;
  for (const r of log) {
    if (r.submissionId === undefined) continue;
    if (r.submissionId !== current) {
      if (closed.has(r.submissionId) || (current !== undefined && !closed.has(current))) return false;
      current = r.submissionId;
    }
    if (r.kind === "submission_settled") closed.add(r.submissionId);
  }
  return true;
}
