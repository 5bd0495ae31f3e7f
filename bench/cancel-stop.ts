/**
 * Cancel → stop on the local cloud (issue 23 §3): how long a running worker takes to learn of a
 * cancel made through the http function and stop. Each sample posts a slow reply (the basic
 * example's keyless model streams a message saying "slow" a character every 250 ms), waits for
 * its first streamed record, then POSTs the cancel and reads back, from the conversation's log,
 * when the worker wrote its last streamed record and its `submission_settled`. The worker learns
 * of the cancel from its next fenced append (a delta flush) rather than its next lease renewal.
 *
 *   npm run bench -- cancel            # this bench alone (emulators and the local cloud started here)
 *   npm run bench -- aws               # with the other serverless figures
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalCloud, type LocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { createDynamoStore } from "../src/dynamodb/index.ts";
import type { Store } from "../src/store/store.ts";
import { BenchClient, runConcurrently } from "./http-client.ts";
import { atMost, figure, note } from "./report.ts";
import { percentile } from "./stats.ts";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** Cancels measured. */
const SAMPLES = 30;
/** Slow replies cancelled at once (each on its own worker). */
const CONCURRENCY = 2;
const TARGET_P99 = atMost(2_000, " ms");

interface Sample {
  /** Cancel POST sent → the `submission_settled` record's time. */
  settleMs: number;
  /** Cancel POST sent → the last record the run streamed (its stop). */
  stopMs: number;
  /** The cancel POST's own round trip. */
  answerMs: number;
  /** The run ended on its own before the cancel reached it. */
  lost: boolean;
}

/** Cancel → stop p50/p99 on the local cloud (the emulators' endpoints in the environment). */
export async function benchCancelStop(): Promise<void> {
  const logs: string[] = [];
  const cloud = await startLocalCloud({
    assembly: exampleAssembly(resolve(ROOT, "examples/basic/agents.ts")).dir,
    name: `bench-cancel-${process.pid}`,
    workers: CONCURRENCY,
    sweeperRateMs: false,
    log: (line, source) => logs.push(`[${source}] ${line}`),
    onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
  });
  const client = new BenchClient(cloud.url);
  const store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
  try {
    await sample(cloud, client, store); // warm both workers' containers
    await sample(cloud, client, store);
    const samples: Sample[] = [];
    await runConcurrently(SAMPLES, CONCURRENCY, async () => void samples.push(await sample(cloud, client, store)));
    const stopped = samples.filter((s) => !s.lost);
    console.log(
      `cancel of a running reply → its worker stops, local cloud (DynamoDB Local + fauxqs, ${stopped.length} cancels, ${CONCURRENCY} at once; ` +
        "the worker learns of it at its next delta flush, not its next lease renewal):",
    );
    figure("cancel → settled cancelled, p50", percentile(stopped.map((s) => s.settleMs), 50), "ms", undefined, 0);
    figure("cancel → settled cancelled, p99", percentile(stopped.map((s) => s.settleMs), 99), "ms", TARGET_P99, 0);
    note(`cancel → the run's last streamed record: p50 ${percentile(stopped.map((s) => s.stopMs), 50).toFixed(0)} ms, p99 ${percentile(stopped.map((s) => s.stopMs), 99).toFixed(0)} ms`);
    note(`the cancel's own answer (202 cancelling): p50 ${percentile(samples.map((s) => s.answerMs), 50).toFixed(0)} ms, p99 ${percentile(samples.map((s) => s.answerMs), 99).toFixed(0)} ms`);
    const lost = samples.length - stopped.length;
    if (lost > 0) note(`(${lost} cancels lost the race to the run's own end: settled succeeded)`);
  } catch (err) {
    process.stderr.write(`--- local cloud output (last 40 lines) ---\n${logs.slice(-40).join("\n")}\n`);
    throw err;
  } finally {
    client.close();
    store.close?.();
    await cloud.stop();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One slow reply, cancelled once it streams. */
async function sample(cloud: LocalCloud, client: BenchClient, store: Store): Promise<Sample> {
  const instance = `cancel-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const path = `/agents/assistant/${instance}`;
  const posted = await client.post(path, { kind: "user", body: "tell me slowly about durable logs" });
  if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
  const { submissionId, conversationId } = JSON.parse(posted.body) as { submissionId: string; conversationId: string };
  // Running and streaming: its first delta is in the log.
  for (let waited = 0; ; waited += 50) {
    if (waited > 60_000) throw new Error(`${submissionId} never streamed on ${cloud.url}`);
    if ((await store.readRecords(conversationId)).some((r) => r.kind === "assistant_text_delta")) break;
    await sleep(50);
  }
  const sent = Date.now();
  const answer = await client.post(`${path}/submissions/${submissionId}/cancel`, { reason: "bench" });
  const answerMs = Date.now() - sent;
  if (answer.status !== 202 && answer.status !== 200) throw new Error(`cancel answered ${answer.status}: ${answer.body}`);
  for (let waited = 0; ; waited += 50) {
    if (waited > 120_000) throw new Error(`${submissionId} did not settle after its cancel`);
    if ((await store.getSubmission(submissionId)).status === "settled") break;
    await sleep(50);
  }
  const log = (await store.readRecords(conversationId)).filter((r) => r.submissionId === submissionId);
  const settled = log.find((r) => r.kind === "submission_settled")!;
  const streamed = log.filter((r) => r.kind.startsWith("assistant_"));
  const lastStreamed = streamed.at(-1);
  const payload = settled.payload as { status: string; errorCode?: string };
  return {
    settleMs: Date.parse(settled.time) - sent,
    stopMs: lastStreamed ? Math.max(0, Date.parse(lastStreamed.time) - sent) : 0,
    answerMs,
    lost: payload.errorCode !== "cancelled",
  };
}
