/**
 * Compaction in the serverless shape: the handlers of `src/lambda/` on the local cloud (DynamoDB
 * Local, fauxqs SQS FIFO + S3), reached through the local function URL. A manual compaction is
 * admitted by the http function (which never loads a model) and run by a worker.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ConversationRecord, ConversationRecordOf } from "../../../src/protocol/records.ts";
import { OVERFLOW_ERROR } from "../../support/local-cloud-fixtures/compaction-agents.ts";
import { followSse } from "../../support/sse-follower.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/compaction-agents.ts", import.meta.url));
const suite = useLocalCloud({
  agentsModule,
  workers: 1,
  workerTimeoutMs: 20_000,
  streamMaxMs: 3_000,
  // Room for ?wait=true's 60 s: the function URL ends a request at this timeout, and the wait answers 3 s before it.
  httpTimeoutMs: 65_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "3000" },
});

const uid = () => randomUUID().slice(0, 8);

async function post(path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${suite.cloud.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const ask = (agent: string, instance: string, body: string) => post(`/agents/${agent}/${instance}?wait=true`, { kind: "user", body });
const compactions = (records: ConversationRecord[]) => records.filter((r): r is ConversationRecordOf<"compaction"> => r.kind === "compaction");
const filler = (n: number) => `message ${n} ${"x".repeat(1_000)}`;

describe("local cloud: compaction", () => {
  it("a manual compaction through HTTP runs on a worker; its record is on the stream; a second one builds on the first", async () => {
    suite.dumpLogsOnFailure();
    const instance = `manual-${uid()}`;
    for (const body of ["one", "two", "three"]) expect((await ask("assistant", instance, body)).status).toBe(200);

    const admitted = await post(`/agents/assistant/${instance}/compact`);
    expect(admitted.status).toBe(202);
    expect(Object.keys(admitted.json).sort()).toEqual(["conversationId", "submissionId"]);
    const follower = followSse(`${suite.cloud.url}/agents/assistant/${instance}`);
    await ask("assistant", instance, "four");
    const second = await post(`/agents/assistant/${instance}/compact?wait=true`, { session: "default" });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ status: "succeeded", result: { compacted: true, firstKeptEntryId: expect.any(String) }, usage: expect.any(Object) });

    const events = await follower.finish();
    const streamed = events.filter((e) => e.event === "compaction").map((e) => JSON.parse(e.data) as ConversationRecordOf<"compaction">);
    expect(streamed.map((r) => r.submissionId)).toEqual([admitted.json.submissionId, second.json.submissionId]);
    expect(streamed.map((r) => r.payload.reason)).toEqual(["manual", "manual"]);
    const [first, next] = streamed.map((r) => r.payload.summary);
    expect(first).toContain("[user] two");
    expect(first).not.toContain("[user] three");
    expect(next!.startsWith(first!)).toBe(true);
    expect(next).toContain("[user] three");

    expect((await post(`/agents/assistant/never-${uid()}/compact`, {})).status).toBe(404);
  });

  it("an overflow mid-run compacts and retries on the worker; a third overflow fails context_overflow with the spec's message", async () => {
    suite.dumpLogsOnFailure();
    const instance = `overflow-${uid()}`;
    expect((await ask("windowed", instance, filler(1))).json.status).toBe("succeeded");
    expect((await ask("windowed", instance, filler(2))).json.status).toBe("succeeded");
    // The third message passes the window: compact (keeping it), retry, succeed.
    const third = await ask("windowed", instance, filler(3));
    expect(third.json).toMatchObject({ status: "succeeded", usage: expect.any(Object) });
    let records = await suite.store.readRecords(third.json.conversationId);
    expect(compactions(records).map((r) => [r.submissionId, r.payload.reason])).toEqual([[third.json.submissionId, "overflow"]]);

    // One more exchange worth keeping, so the next overflow can compact twice.
    expect((await ask("windowed", instance, filler(4))).json.status).toBe("succeeded");
    const failed = await ask("windowed", instance, "overflow-always");
    expect(failed.json).toMatchObject({
      status: "failed",
      errorCode: "context_overflow",
      error: `context overflow persisted after 2 compactions: ${OVERFLOW_ERROR}`,
      excludedFromContext: true,
    });
    records = await suite.store.readRecords(third.json.conversationId);
    const mine = compactions(records).filter((r) => r.submissionId === failed.json.submissionId);
    expect(mine).toHaveLength(2);
    expect(mine[1]!.payload.summary.startsWith(mine[0]!.payload.summary)).toBe(true);
    // The session goes on: the failed input is left out of the next request.
    expect((await ask("windowed", instance, "still there?")).json.status).toBe("succeeded");
  });

  it("an input that alone cannot fit settles context_overflow, stays in the log, and the next submission succeeds", async () => {
    suite.dumpLogsOnFailure();
    const instance = `huge-${uid()}`;
    expect((await ask("windowed", instance, "hello")).json.status).toBe("succeeded");
    const huge = `HUGE ${"y".repeat(5_000)}`;
    const failed = await ask("windowed", instance, huge);
    expect(failed.json).toMatchObject({ status: "failed", errorCode: "context_overflow", excludedFromContext: true });
    const next = await ask("windowed", instance, "and now?");
    expect(next.json.status).toBe("succeeded");
    const records = await suite.store.readRecords(next.json.conversationId);
    expect(records.some((r) => r.kind === "user_message" && r.payload.body === huge)).toBe(true);
    const reply = records.filter((r) => r.submissionId === next.json.submissionId && r.kind === "assistant_text_delta").map((r) => (r.payload as { text: string }).text).join("");
    // The request held the summary of "hello" and the new input, not the 5,000 characters.
    expect(Number(/ok \((\d+) chars\)/.exec(reply)?.[1])).toBeLessThan(1_000);
  });
});
