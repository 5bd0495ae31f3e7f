import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord, ConversationRecordOf, RecordKind } from "../../../src/protocol/records.ts";
import { TRIAGE_SCHEMA } from "../../../examples/triage/agents.ts";
import { childSessionOf } from "../../../src/client/child-session.ts";
import { killExamples, recordsUntilSettled, startExampleProcess, type ExampleProcess } from "./support.ts";

/**
 * `npm run example -- triage` as a process, over HTTP as its runbook does: a structured result,
 * a corrective turn, the corrective budget running out, and a delegation to a durable child whose
 * conversation lives where `task_spawned` says.
 */

let dataDir: string;
let ex: ExampleProcess;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-triage-"));
  ex = await startExampleProcess(["run", "example", "--", "triage"], { DATA_DIR: dataDir, RESEARCH_MS: "1500" });
}, 60_000);
afterEach(() => {
  if (ex.proc.exitCode !== null) throw new Error(`the example exited:\n${ex.output()}`);
});
afterAll(async () => {
  await killExamples();
  rmSync(dataDir, { recursive: true, force: true });
});

async function ticket(body: string, query = "?wait=true"): Promise<{ status: number; json: any }> {
  const res = await fetch(`${ex.url}/agents/triage/desk${query}`, {
    method: "POST",
    body: JSON.stringify({ kind: "user", body, resultSchema: TRIAGE_SCHEMA }),
  });
  return { status: res.status, json: await res.json() };
}

async function logOf(submissionId: string, path = "/agents/triage/desk"): Promise<ConversationRecord[]> {
  const records = await recordsUntilSettled(`${ex.url}${path}`, submissionId);
  return records.filter((r) => r.submissionId === submissionId);
}

const ofKind = <K extends RecordKind>(records: ConversationRecord[], kind: K): ConversationRecordOf<K>[] =>
  records.filter((r) => r.kind === kind) as ConversationRecordOf<K>[];
const corrections = (records: ConversationRecord[]) => ofKind(records, "user_message").filter((r) => r.payload.origin === "correction");

describe("examples/triage", () => {
  it("a ticket gets a verdict that validates against the schema at once", async () => {
    const answer = await ticket("the export button is grey");
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ status: "succeeded", result: { priority: "normal", summary: "the export button is grey" } });
    expect(corrections(await logOf(answer.json.submissionId))).toHaveLength(0);
  });

  it("an urgent ticket: the first verdict does not validate, a corrective turn, then a valid one", async () => {
    const answer = await ticket("urgent: checkout is down");
    expect(answer.json).toMatchObject({ status: "succeeded", result: { priority: "high", summary: "urgent: checkout is down" } });
    const log = await logOf(answer.json.submissionId);
    const fixes = corrections(log);
    expect(fixes).toHaveLength(1);
    expect(fixes[0]!.payload.body).toContain("Validation error: result/priority must be equal to one of the allowed values");
    const replies = ofKind(log, "assistant_message_completed").map((r) => JSON.stringify(r.payload.message.body));
    expect(replies).toHaveLength(2);
    expect(replies[0]).toContain('\\"priority\\":\\"urgent\\"');
  });

  it("a ticket asking for a poem never validates: the corrective turns run out, result_schema_invalid", async () => {
    const answer = await ticket("write me a poem about refunds");
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({
      status: "failed",
      errorCode: "result_schema_invalid",
      error: "structured result did not validate against the requested schema: the reply is not a JSON document",
    });
    expect(answer.json.result).toBeUndefined();
    const log = await logOf(answer.json.submissionId);
    expect(corrections(log), "the default budget: 2 corrective turns").toHaveLength(2);
    expect(ofKind(log, "assistant_message_completed")).toHaveLength(3);
  });

  it("a ticket asking for research: triage waits for a durable researcher and quotes its outcome", { timeout: 30_000 }, async () => {
    const admitted = await ticket("please research the export error", "");
    expect(admitted.status).toBe(202);
    const { submissionId } = admitted.json as { submissionId: string };

    // While the researcher reads, the parent is parked: waiting, no lease.
    let seen: any;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      seen = await (await fetch(`${ex.url}/agents/triage/desk/submissions/${submissionId}`)).json();
      if (seen.status !== "queued" && seen.status !== "running") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(seen).toMatchObject({ status: "waiting" });
    expect(seen.leaseExpiresAt).toBeUndefined();
    // A caught-up stream of a waiting parent ends like an idle one: read the log once it settled.
    for (const deadline = Date.now() + 15_000; seen.status !== "settled" && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await (await fetch(`${ex.url}/agents/triage/desk/submissions/${submissionId}`)).json();
    }
    expect(seen).toMatchObject({ status: "settled", attemptCount: 1, outcome: { status: "succeeded" } });

    const log = await logOf(submissionId);
    const [spawned, ...more] = ofKind(log, "task_spawned");
    expect(more).toHaveLength(0);
    expect(spawned!.payload).toMatchObject({ agent: "researcher", prompt: "Find background for this ticket: please research the export error" });
    const [outcome] = ofKind(log, "tool_outcome");
    expect(outcome!.payload).toMatchObject({ callId: spawned!.payload.callId, toolName: "task" });
    const found = (outcome!.payload.content as { text: string }[])[0]!.text;
    expect(found).toBe('2 earlier tickets match "please research the export error"; both were fixed by clearing the export cache.');
    const [settled] = ofKind(log, "submission_settled");
    expect(settled!.payload).toMatchObject({ status: "succeeded", result: { priority: "normal", research: found } });

    // The child is an ordinary conversation at the address task_spawned gives (the client's
    // childSessionOf: its agent, its instance, and the session `task-<the call's safe id>`).
    const { childConversationId, childSubmissionId } = spawned!.payload;
    const address = childSessionOf(spawned!.payload);
    expect(address).toMatchObject({ agent: "researcher", instance: expect.stringMatching(/^desk:call_research_\d+-[0-9a-f]{8}$/) });
    expect(address.session).toBe(`task-${address.instance.slice("desk:".length)}`);
    const childPath = `/agents/${address.agent}/${encodeURIComponent(address.instance)}?session=${address.session}`;
    const child = await recordsUntilSettled(`${ex.url}${childPath}`, childSubmissionId);
    expect(child[0]).toMatchObject({
      kind: "conversation_created",
      conversationId: childConversationId,
      payload: { parentRef: { conversationId: settled!.conversationId, callId: spawned!.payload.callId } },
    });
    expect(ofKind(child, "user_message")[0]!.payload.body).toBe(spawned!.payload.prompt);
    const childReply = ofKind(child, "assistant_message_completed").at(-1)!;
    expect(JSON.stringify(childReply.payload.message.body)).toContain(JSON.stringify(found).slice(1, -1));
    expect(ofKind(child, "submission_settled")[0]!.payload.status).toBe("succeeded");
  });

  it("a dispatch whose resultSchema does not compile is a 400 naming it", async () => {
    const res = await fetch(`${ex.url}/agents/triage/desk`, {
      method: "POST",
      body: JSON.stringify({ kind: "user", body: "hi", resultSchema: { type: "nonsense" } }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_dispatch", error: expect.stringContaining("invalid resultSchema") });
  });
});
