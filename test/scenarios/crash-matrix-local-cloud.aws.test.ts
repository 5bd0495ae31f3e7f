/**
 * The crash matrix, serverless shape: on the local cloud, the process that reaches a phase of the
 * fault seam for submission A is `kill -9`-ed there (`HARNESS_FAULTS` in every function's
 * environment: the http function for `admitted`, a worker for the rest). Nothing helps recovery
 * but what a deployment has: SQS redelivery, lease expiry, the sweeper's schedule. The client
 * retries only what failed to reach it (a POST cut by the http function's death, other than A's).
 * Every phase runs at once, each in its own session. Expectations: `test/support/crash-matrix.ts`.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { SUBMISSION_FAULT_PHASES } from "../../src/ports/faults.ts";
import type { Submission } from "../../src/store/submission.ts";
import { CRASH_MATRIX, CRASHED_MESSAGE, crashCaseViolations, NEXT_MESSAGE } from "../support/crash-matrix.ts";
import { useLocalCloud } from "../support/local-cloud-suite.ts";
import { followSse } from "../support/sse-follower.ts";

const LEASE_MS = 1_500;
const agentsModule = fileURLToPath(new URL("../support/local-cloud-fixtures/agents.ts", import.meta.url));
const run = randomUUID().slice(0, 6);
const firedDir = mkdtempSync(join(tmpdir(), "crash-matrix-fired-"));

const aId = (phase: string) => `cm-${phase}-a-${run}`;

const suite = useLocalCloud({
  agentsModule,
  workers: 3,
  workerTimeoutMs: 30_000,
  queueVisibilityTimeoutMs: 40_000,
  streamMaxMs: 5_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: 1_000,
  env: {
    HARNESS_LEASE_MS: String(LEASE_MS),
    HARNESS_STALE_QUEUED_MS: "1000",
    // Every delta durable at once, so `mid_stream` is reached in a short reply.
    HARNESS_FLUSH_BYTES: "1",
    HARNESS_FAULTS: JSON.stringify(SUBMISSION_FAULT_PHASES.map((phase) => ({ phase, action: "crash", match: aId(phase) }))),
    HARNESS_FAULTS_DIR: firedDir,
  },
});

afterAll(() => rmSync(firedDir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POSTs a dispatch; `retry`: again (same dispatch id) until it is answered, as a client would. */
async function dispatch(instance: string, body: Record<string, unknown>, retry: boolean): Promise<number | "cut"> {
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`${suite.cloud.url}/agents/assistant/${instance}`, { method: "POST", body: JSON.stringify(body) });
      await res.body?.cancel();
      if (res.status < 500 || !retry) return res.status;
    } catch {
      if (!retry) return "cut";
    }
    if (i > 100) throw new Error(`${instance}: no answer to ${String(body.dispatchId)}`);
    await sleep(200);
  }
}

async function settled(id: string, timeoutMs: number): Promise<Submission> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sub = await suite.store.getSubmission(id).catch(() => undefined);
    if (sub?.status === "settled") return sub;
    if (Date.now() > deadline) throw new Error(`${id} did not settle within ${timeoutMs} ms (${sub?.status ?? "not admitted"})`);
    await sleep(200);
  }
}

describe.concurrent("crash matrix (serverless: the process kill -9-ed at each phase on the local cloud)", () => {
  it.for([...SUBMISSION_FAULT_PHASES])("%s", { timeout: 200_000 }, async (phase) => {
    onTestFailed(() => {
      process.stderr.write(`--- local cloud output (${phase}, last 120 lines) ---\n${suite.logs.slice(-120).join("\n")}\n`);
    });
    const instance = `cm-${phase}-${run}`;
    const a = aId(phase);
    const b = `cm-${phase}-b-${run}`;
    const reader = followSse(`${suite.cloud.url}/agents/assistant/${instance}`, { timeoutMs: 180_000 });
    const first = await dispatch(instance, { kind: "user", body: CRASHED_MESSAGE, dispatchId: a }, phase !== "admitted");
    if (phase === "admitted") expect(first, "the http function died answering A").toBe("cut");
    else expect(first).toBe(202);
    expect(await dispatch(instance, { kind: "user", body: NEXT_MESSAGE, dispatchId: b }, true)).toBe(202);

    // Generous: recovery waits out leases and the sweep, and a loaded machine stretches both.
    const [subA, subB] = [await settled(a, 120_000), await settled(b, 120_000)];
    expect(suite.logs.some((l) => l.includes(`fault: crash at ${phase} of ${a}`)), "the process died at the phase").toBe(true);
    const live = (await reader.finish()).map((e) => JSON.parse(e.data) as ConversationRecord);
    const violations = crashCaseViolations({
      phase,
      sessionKey: `assistant/${instance}/default`,
      a: subA,
      b: subB,
      log: await suite.store.readRecords(subA.conversationId),
      logAtCrash: live,
    });
    expect(violations).toEqual([]);
    expect(CRASH_MATRIX[phase]).toBeDefined();
  });
});
