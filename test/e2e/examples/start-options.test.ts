import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TRIAGE_SCHEMA } from "../../../examples/triage/agents.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { killExamples, recordsUntilSettled, startExampleProcess, startScriptNodeOptions } from "./support.ts";

/**
 * A subagent and an approval under the Node options `npm start` runs with (issue 33). The
 * quickstart's one agent has neither (quickstart.test.ts drives its structured results); the
 * shipped entry points that do are `npm run example -- triage` (a structured verdict, delegated
 * research through `task`) and `npm run example -- approvals` (a refund that waits for a person).
 * Each runs here as its npm script's node command with `npm start`'s options added: the heap flag
 * among them is one Node refuses in a worker thread, and the verdict is checked on one.
 */

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-start-options-"));
});
afterEach(killExamples);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** `node <npm start's options> examples/run.ts <name>` (the example script's own option is among them). */
function startUnderStartOptions(name: string, env: Record<string, string> = {}) {
  const options = startScriptNodeOptions();
  expect(options).toContain("--disable-warning=ExperimentalWarning");
  return startExampleProcess([], { DATA_DIR: join(dataDir, name), ...env }, [...options, "examples/run.ts", name]);
}

const ofSubmission = (records: ConversationRecord[], submissionId: string) => records.filter((r) => r.submissionId === submissionId);

describe("the examples under npm start's Node options", () => {
  it("triage: a ticket asking for research waits for a researcher subagent, then its verdict validates on the result-schema thread", { timeout: 60_000 }, async () => {
    const ex = await startUnderStartOptions("triage", { RESEARCH_MS: "200" });
    const res = await fetch(`${ex.url}/agents/triage/desk?wait=true`, {
      method: "POST",
      body: JSON.stringify({ kind: "user", body: "please research the export error", resultSchema: TRIAGE_SCHEMA }),
    });
    expect(res.status, ex.output()).toBe(200);
    const answer = (await res.json()) as { submissionId: string; status: string; result?: Record<string, string> };
    const found = '2 earlier tickets match "please research the export error"; both were fixed by clearing the export cache.';
    expect(answer).toMatchObject({ status: "succeeded", result: { priority: "normal", research: found } });
    const log = ofSubmission(await recordsUntilSettled(`${ex.url}/agents/triage/desk`, answer.submissionId), answer.submissionId);
    const spawned = log.filter((r) => r.kind === "task_spawned");
    expect(spawned).toHaveLength(1);
    expect(spawned[0]!.payload).toMatchObject({ agent: "researcher" });
    expect(ex.output()).not.toContain("ERR_WORKER_INVALID_EXEC_ARGV");
  });

  it("approvals: a refund over the threshold waits for a person, and approved it runs once", { timeout: 60_000 }, async () => {
    const ex = await startUnderStartOptions("approvals");
    const shop = `${ex.url}/agents/support/flags`;
    const admitted = await fetch(shop, { method: "POST", body: JSON.stringify({ kind: "user", body: "refund 300 for order K-9" }) });
    expect(admitted.status).toBe(202);
    const { submissionId } = (await admitted.json()) as { submissionId: string };
    let pending: { callId: string }[] = [];
    for (const deadline = Date.now() + 30_000; pending.length === 0; ) {
      if (Date.now() > deadline) throw new Error(`never asked:\n${ex.output()}`);
      await new Promise((r) => setTimeout(r, 100));
      pending = ((await (await fetch(`${shop}/approvals`)).json()) as { approvals: { callId: string }[] }).approvals;
    }
    const decided = await fetch(`${shop}/submissions/${submissionId}/approvals/${pending[0]!.callId}`, { method: "POST", body: JSON.stringify({ approved: true }) });
    expect(decided.status).toBe(200);
    const log = ofSubmission(await recordsUntilSettled(shop, submissionId, 30_000), submissionId);
    expect(log.find((r) => r.kind === "submission_settled")?.payload).toMatchObject({ status: "succeeded" });
    expect(ex.output().match(/refund: \$300 paid back/g), "ran once").toHaveLength(1);
  });
});
