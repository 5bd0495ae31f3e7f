/**
 * Tool approval survives kill -9 on the local cloud (issue 22, ADR 0025): the real handlers, a
 * function process killed (HARNESS_FAULTS) between `approval_requested` and the park (`parking`),
 * right after the park (`parked`), in the http function between the decision's guarded write and
 * the requeue's doorbell (`decided`), and after the approved tool ran but before its outcome was
 * recorded (`tool_ran`), and while the approved tool runs (its worker process killed from outside).
 * Recovery is lease expiry, SQS redelivery and the sweeper. Each ends with
 * one decision recorded, the tool run at most once (exactly once unless the kill came after it
 * ran), one settlement. And two different decisions racing from two http processes: one wins.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { Submission } from "../../src/store/submission.ts";
import { useLocalCloud } from "../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../support/local-cloud-fixtures/wait-agents.ts", import.meta.url));
const run = randomUUID().slice(0, 6);
const firedDir = mkdtempSync(join(tmpdir(), "approval-crash-fired-"));
const runs = mkdtempSync(join(tmpdir(), "approval-crash-runs-"));

const idOf = (name: string) => `ac-${name}-${run}`;
const CASES = [
  { name: "parking", phase: "parking" },
  { name: "parked", phase: "parked" },
  { name: "decided", phase: "decided" },
  { name: "tool-ran", phase: "tool_ran" },
] as const;

const suite = useLocalCloud({
  agentsModule,
  workers: 2,
  workerTimeoutMs: 30_000,
  queueVisibilityTimeoutMs: 40_000,
  streamMaxMs: 5_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: 1_000,
  env: {
    HARNESS_LEASE_MS: "2000",
    HARNESS_STALE_QUEUED_MS: "1000",
    HARNESS_TEST_WAIT_DIR: runs,
    HARNESS_FAULTS: JSON.stringify(CASES.map(({ name, phase }) => ({ phase, action: "crash", match: idOf(name) }))),
    HARNESS_FAULTS_DIR: firedDir,
  },
});

afterAll(() => {
  rmSync(firedDir, { recursive: true, force: true });
  rmSync(runs, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ranTimes = (callId: string) => (existsSync(join(runs, `ran-${callId}`)) ? readFileSync(join(runs, `ran-${callId}`), "utf8").trim().split("\n").length : 0);

async function inStatus(id: string, status: Submission["status"], timeoutMs: number): Promise<Submission> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const sub = await suite.store.getSubmission(id).catch(() => undefined);
    if (sub?.status === status) return sub;
    if (Date.now() > deadline) throw new Error(`${id} was not ${status} within ${timeoutMs} ms (${sub?.status ?? "not admitted"})`);
    await sleep(250);
  }
}

/** Posts a decision; a dropped connection (the http function killed mid-request) answers undefined. */
async function decide(base: string, path: string, approved: boolean): Promise<{ status: number; json: any } | undefined> {
  try {
    const res = await fetch(`${base}${path}`, { method: "POST", body: JSON.stringify({ approved }) });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  } catch {
    return undefined;
  }
}

/** Posts a decision as a client whose request failed does: again until the function answers (it restarts after a kill). */
async function decideUntilAnswered(base: string, path: string, approved: boolean): Promise<{ status: number; json: any }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await decide(base, path, approved);
    if (answer !== undefined) return answer;
    if (Date.now() > deadline) throw new Error(`no answer from ${base}${path}`);
    await sleep(250);
  }
}

describe.concurrent("local cloud: tool approval under kill -9", () => {
  it.for(CASES)("$name ($phase)", { timeout: 240_000 }, async ({ name }) => {
    onTestFailed(() => {
      process.stderr.write(`--- ${name}: local cloud output (last 120 lines) ---\n${suite.logs.slice(-120).join("\n")}\n`);
    });
    const id = idOf(name);
    const tag = `${name}${run}`;
    const instance = `${name}-${run}`;
    const callId = `${tag}-refund-0`;
    const res = await fetch(`${suite.cloud.url}/agents/support/${instance}`, { method: "POST", body: JSON.stringify({ kind: "user", body: `${tag}: refund 240`, dispatchId: id }) });
    expect(res.status).toBe(202);
    const { submissionId } = (await res.json()) as { submissionId: string };
    expect(submissionId).toBe(id);
    await inStatus(id, "waiting", 120_000);
    expect(ranTimes(callId), "nothing ran before the decision").toBe(0);

    const path = `/agents/support/${instance}/submissions/${id}/approvals/${callId}`;
    // The decision that kills its http function goes to one of its own (the cases run concurrently).
    const base = name === "decided" ? (await suite.cloud.extraFunction("http")).url : suite.cloud.url;
    const first = await decide(base, path, true);
    if (name === "decided") expect(first, "the http function was killed mid-request").toBeUndefined();
    else expect(first).toMatchObject({ status: 200, json: { approved: true } });
    // A client whose request failed sends the same decision again: it stands (200), nothing twice.
    expect(await decideUntilAnswered(base, path, true)).toMatchObject({ status: 200, json: { approved: true } });

    const settled = await inStatus(id, "settled", 200_000);
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(suite.logs.some((l) => l.includes("fault: crash at") && l.includes(id)), "the function was killed at the phase").toBe(true);
    expect(ranTimes(callId), "the approved tool ran exactly once").toBe(1);
    const log = await suite.store.readRecords(settled.conversationId);
    expect(log.filter((r) => r.kind === "approval_requested"), "asked once").toHaveLength(1);
    expect(log.filter((r) => r.kind === "approval_decided"), "one decision recorded").toHaveLength(1);
    expect(log.filter((r) => r.kind === "tool_started"), "started once").toHaveLength(1);
    expect(log.filter((r) => r.kind === "submission_settled"), "one settlement").toHaveLength(1);
    const outcomes = log.filter((r) => r.kind === "tool_outcome");
    expect(outcomes).toHaveLength(1);
    // Killed after the tool ran and before its outcome: the call is never run again; the model
    // reads that it was interrupted. Otherwise it reads the refund.
    const final = JSON.stringify(log.findLast((r) => r.kind === "assistant_message_completed")!.payload);
    if (name === "tool-ran") expect(outcomes[0]!.payload).toMatchObject({ callId, isError: true });
    else expect(final).toContain("done: refunded $240");
  });

  it("two different decisions racing from two http processes: one is recorded, the other refused already_decided; one wake, the tool run at most once", { timeout: 240_000 }, async () => {
    const second = await suite.cloud.extraFunction("http");
    const tag = `race${run}`;
    const instance = `race-${run}`;
    const callId = `${tag}-refund-0`;
    const res = await fetch(`${suite.cloud.url}/agents/support/${instance}`, { method: "POST", body: JSON.stringify({ kind: "user", body: `${tag}: refund 300` }) });
    const { submissionId } = (await res.json()) as { submissionId: string };
    await inStatus(submissionId, "waiting", 120_000);
    const path = `/agents/support/${instance}/submissions/${submissionId}/approvals/${callId}`;
    const [a, b] = await Promise.all([decide(suite.cloud.url, path, true), decide(second.url, path, false)]);
    const answers = [a, b].map((r) => r?.status).sort();
    expect(answers).toEqual([200, 409]);
    const loser = [a, b].find((r) => r?.status === 409)!;
    expect(loser.json).toMatchObject({ code: "already_decided" });
    const winner = [a, b].find((r) => r?.status === 200)!;
    const settled = await inStatus(submissionId, "settled", 200_000);
    const log = await suite.store.readRecords(settled.conversationId);
    expect(log.filter((r) => r.kind === "approval_decided").map((r) => r.payload)).toEqual([expect.objectContaining({ approved: winner.json.approved })]);
    expect(ranTimes(callId)).toBe(winner.json.approved ? 1 : 0);
    expect(log.filter((r) => r.kind === "submission_settled")).toHaveLength(1);
    // Asked once, woken once: two runs (attempt markers). Counting deliveries instead also counted
    // the sweeper's re-ring of a resumed head a loaded machine had not claimed yet (a backstop).
    expect((await suite.store.listAttempts(submissionId)).length, "asked once, woken once").toBe(2);
  });
});

// Alone, after the concurrent cases: its tool holds a worker until the kill, which would make the
// race's "woken once" count the sweeper's re-ring of a head left queued for want of a worker.
describe("local cloud: the approved tool's process killed mid-run", () => {
  it("killed (kill -9 from outside) while the approved tool runs: never run again, the model reads it was interrupted; one decision, one settlement", { timeout: 240_000 }, async () => {
    onTestFailed(() => {
      process.stderr.write(`--- mid-tool: local cloud output (last 120 lines) ---\n${suite.logs.slice(-120).join("\n")}\n`);
    });
    const tag = `midtool${run}`;
    const instance = `midtool-${run}`;
    const callId = `${tag}-wire`;
    const res = await fetch(`${suite.cloud.url}/agents/support/${instance}`, { method: "POST", body: JSON.stringify({ kind: "user", body: `${tag}: wire 700` }) });
    expect(res.status).toBe(202);
    const { submissionId } = (await res.json()) as { submissionId: string };
    await inStatus(submissionId, "waiting", 120_000);
    expect(ranTimes(callId), "nothing ran before the decision").toBe(0);
    const path = `/agents/support/${instance}/submissions/${submissionId}/approvals/${callId}`;
    expect(await decideUntilAnswered(suite.cloud.url, path, true)).toMatchObject({ status: 200, json: { approved: true } });

    // The tool is running (it waits for its gate): kill the worker process that runs it.
    const deadline = Date.now() + 120_000;
    while (ranTimes(callId) === 0) {
      if (Date.now() > deadline) throw new Error("the approved tool never started");
      await sleep(100);
    }
    const pid = Number(readFileSync(join(runs, `ran-${callId}`), "utf8").trim().split("\n")[0]);
    expect(pid).not.toBe(process.pid);
    process.kill(pid, "SIGKILL");
    // Open the gate: a tool run again would now finish (and be counted).
    writeFileSync(join(runs, `gate-${callId}`), "go");

    const settled = await inStatus(submissionId, "settled", 200_000);
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(ranTimes(callId), "the approved tool started once").toBe(1);
    expect(existsSync(join(runs, `done-${callId}`)), "and never finished: nothing ran it again").toBe(false);
    const log = await suite.store.readRecords(settled.conversationId);
    expect(log.filter((r) => r.kind === "approval_decided"), "one decision recorded").toHaveLength(1);
    expect(log.filter((r) => r.kind === "tool_started"), "started once").toHaveLength(1);
    const outcomes = log.filter((r) => r.kind === "tool_outcome");
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]!.payload).toMatchObject({ callId, isError: true });
    expect(JSON.stringify(outcomes[0]!.payload), "the model reads that the call was interrupted").toContain("interrupted before a result was recorded");
    expect(log.filter((r) => r.kind === "submission_settled"), "one settlement").toHaveLength(1);
  });
});
