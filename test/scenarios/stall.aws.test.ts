/**
 * A killed worker must not stall its session for the queue's visibility timeout (DESIGN §3.1 "A
 * dead worker must not hold a session", ADR 0028). The local cloud runs with the construct's
 * worker timeout (15 min) and queue visibility (16 min), so a doorbell left in flight by a dead
 * invocation would hold its message group for 16 minutes; only the lease and the sweep are short
 * here, to keep the file quick (`npm run soak -- --cloud` proves it with every default).
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SQSEvent } from "aws-lambda";
import { afterAll, describe, expect, it } from "vitest";
import type { LocalFunction } from "../../dev/local-cloud/function-host.ts";
import type { Submission } from "../../src/store/submission.ts";
import { useLocalCloud } from "../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../support/local-cloud-fixtures/agents.ts", import.meta.url));
const run = randomUUID().slice(0, 6);
const firedDir = mkdtempSync(join(tmpdir(), "stall-fired-"));
afterAll(() => rmSync(firedDir, { recursive: true, force: true }));

/** Submissions whose first doorbell's container is killed before the handler runs. */
const killBeforeHandler = new Set<string>();
const killedAt = new Map<string, number>();

const suite = useLocalCloud({
  agentsModule,
  workers: 2,
  // The construct's defaults: worker timeout 15 min, visibility 16 min (not given here).
  streamMaxMs: 3_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: 2_000,
  env: {
    HARNESS_LEASE_MS: "2000",
    HARNESS_STALE_QUEUED_MS: "2000",
    HARNESS_FAULTS: JSON.stringify([{ phase: "claimed", action: "crash", match: `stall-claimed-a-${run}` }]),
    HARNESS_FAULTS_DIR: firedDir,
  },
  beforeInvoke: (event: SQSEvent, fn: LocalFunction) => {
    for (const record of event.Records) {
      const { submissionId } = JSON.parse(record.body) as { submissionId: string };
      if (!killBeforeHandler.delete(submissionId)) continue;
      // As an init failure or a runtime crash before the handler: the invocation fails, the
      // message stays in flight for the queue's visibility timeout (16 min here).
      fn.kill("SIGKILL");
      killedAt.set(submissionId, Date.now());
    }
  },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${suite.cloud.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
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

describe("a killed worker does not stall its session (construct's worker timeout and visibility)", () => {
  it("a doorbell whose container died before the handler ran: the session runs again, and so does its next submission", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure(120);
    const instance = `stall-pre-${run}`;
    const a = `stall-pre-a-${run}`;
    const b = `stall-pre-b-${run}`;
    killBeforeHandler.add(a);
    expect((await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=1 sleep=50", dispatchId: a })).status).toBe(202);
    expect((await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=1 sleep=50", dispatchId: b })).status).toBe(202);
    // Recovery is the sweep's (a stale head re-rung) and must not wait behind the dead message.
    const [subA, subB] = [await settled(a, 60_000), await settled(b, 60_000)];
    expect(killedAt.has(a), "the container died before the handler").toBe(true);
    expect(subA.outcome).toMatchObject({ status: "succeeded" });
    expect(subB.outcome).toMatchObject({ status: "succeeded" });
  });

  it("a worker killed right after its claim: the run is taken over after its lease", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure(120);
    const instance = `stall-claimed-${run}`;
    const a = `stall-claimed-a-${run}`;
    const b = `stall-claimed-b-${run}`;
    expect((await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=1 sleep=50", dispatchId: a })).status).toBe(202);
    expect((await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=1 sleep=50", dispatchId: b })).status).toBe(202);
    const [subA, subB] = [await settled(a, 60_000), await settled(b, 60_000)];
    expect(suite.logs.some((l) => l.includes(`fault: crash at claimed of ${a}`)), "the worker died after its claim").toBe(true);
    expect(subA.attemptCount, "the killed attempt and its successor (a loaded machine may add one)").toBeGreaterThanOrEqual(2);
    expect(subB.outcome).toMatchObject({ status: "succeeded" });
  });
});
