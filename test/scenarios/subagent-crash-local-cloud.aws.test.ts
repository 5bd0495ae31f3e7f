/**
 * Durable subagents survive kill -9 on the local cloud (issue 10): the real handlers, a worker
 * process killed (HARNESS_FAULTS) right after its parent parked, while a child streams, between a
 * child's settlement record and the delivery of its outcome, and after the last delivery requeued
 * the parent but before its doorbell. Recovery is SQS redelivery, lease expiry and the sweeper;
 * each parent settles once with every outcome delivered once.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { Submission } from "../../src/store/submission.ts";
import { useLocalCloud } from "../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../support/local-cloud-fixtures/subagent-agents.ts", import.meta.url));
const run = randomUUID().slice(0, 6);
const firedDir = mkdtempSync(join(tmpdir(), "subagent-crash-fired-"));

const parentOf = (name: string) => `sc-${name}-${run}`;
const CASES: Array<{ name: string; phase: string; match: string }> = [
  { name: "parked", phase: "parked", match: parentOf("parked") },
  { name: "child-streams", phase: "mid_stream", match: `${parentOf("child-streams")}:call-alpha` },
  { name: "child-settled", phase: "parent_waking", match: `${parentOf("child-settled")}:call-alpha` },
  { name: "requeued", phase: "parent_requeued", match: parentOf("requeued") },
];

const suite = useLocalCloud({
  agentsModule,
  workers: 3,
  workerTimeoutMs: 30_000,
  queueVisibilityTimeoutMs: 40_000,
  streamMaxMs: 5_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: 1_000,
  env: {
    HARNESS_LEASE_MS: "2000",
    HARNESS_STALE_QUEUED_MS: "1000",
    HARNESS_FLUSH_BYTES: "1", // every delta durable at once: mid_stream is reached
    HARNESS_FAULTS: JSON.stringify(CASES.map(({ phase, match }) => ({ phase, action: "crash", match }))),
    HARNESS_FAULTS_DIR: firedDir,
  },
});

afterAll(() => rmSync(firedDir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function settled(id: string, timeoutMs: number): Promise<Submission> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sub = await suite.store.getSubmission(id).catch(() => undefined);
    if (sub?.status === "settled") return sub;
    if (Date.now() > deadline) throw new Error(`${id} did not settle within ${timeoutMs} ms (${sub?.status ?? "not admitted"})`);
    await sleep(250);
  }
}

describe.concurrent("local cloud: subagents under kill -9", () => {
  it.for(CASES)("$name ($phase)", { timeout: 240_000 }, async ({ name, match }) => {
    onTestFailed(() => {
      process.stderr.write(`--- ${name}: local cloud output (last 120 lines) ---\n${suite.logs.slice(-120).join("\n")}\n`);
    });
    const id = parentOf(name);
    const res = await fetch(`${suite.cloud.url}/agents/lead/${name}-${run}`, { method: "POST", body: JSON.stringify({ kind: "user", body: "spawn: alpha, beta", dispatchId: id }) });
    expect(res.status).toBe(202);
    await res.body?.cancel();
    const parent = await settled(id, 200_000);
    expect(parent.outcome).toMatchObject({ status: "succeeded" });
    expect(suite.logs.some((l) => l.includes(`fault: crash at`) && l.includes(match)), "the worker was killed at the phase").toBe(true);
    const log = await suite.store.readRecords(parent.conversationId);
    expect(log.filter((r) => r.kind === "submission_settled")).toHaveLength(1);
    const outcomes = log.filter((r) => r.kind === "tool_outcome").map((r) => r.payload);
    expect(outcomes.map((o) => o.callId).sort()).toEqual(["call-alpha", "call-beta"]);
    expect(outcomes.every((o) => !o.isError)).toBe(true);
    expect(log.filter((r) => r.kind === "task_spawned").map((r) => r.payload.callId).sort()).toEqual(["call-alpha", "call-beta"]);
    const final = log.findLast((r) => r.kind === "assistant_message_completed")!;
    expect(JSON.stringify(final.payload)).toContain("researcher on: alpha | researcher on: beta");
  });
});
