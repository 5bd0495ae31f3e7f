/**
 * Cancel in the serverless shape: the handlers of `src/lambda/` on the local cloud (DynamoDB
 * Local, fauxqs SQS FIFO + S3), reached through the local function URL. The http function
 * cancels; a running submission is on a worker Lambda, which learns of the cancel from its lease
 * renewal, stops at its next safe point (the model stream aborted) and settles; a queued or
 * waiting one settles at once. Each time, the session's next submission then runs.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import type { Submission } from "../../../src/store/submission.ts";
import { followSse } from "../../support/sse-follower.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { inStatus, requestJson, uid, waitFor } from "../../support/local-cloud-http.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/cancel-agents.ts", import.meta.url));
const LEASE_MS = 3_000;
const suite = useLocalCloud({
  agentsModule,
  workers: 2,
  workerTimeoutMs: 60_000,
  streamMaxMs: 3_000,
  // Room for ?wait=true's 60 s: the function URL ends a request at this timeout, and the wait answers 3 s before it.
  httpTimeoutMs: 65_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: String(LEASE_MS) },
});

const byRequest = (reason = "cancelled by request") => ({ status: "failed", error: `cancelled: ${reason}`, errorCode: "cancelled" });

const post = (path: string, body?: unknown) => requestJson(`${suite.cloud.url}${path}`, "POST", body);

const cancel = (agent: string, instance: string, submissionId: string, reason?: string) =>
  post(`/agents/${agent}/${instance}/submissions/${submissionId}/cancel`, reason === undefined ? undefined : { reason });

const settled = (submissionId: string): Promise<Submission> => inStatus(suite.store, submissionId, "settled");

const settlementsOf = (records: ConversationRecord[], submissionId: string) =>
  records.filter((r) => r.kind === "submission_settled" && r.submissionId === submissionId).map((r) => r.payload);

const textOf = (records: ConversationRecord[], submissionId: string) =>
  records
    .filter((r) => r.kind === "assistant_text_delta" && r.submissionId === submissionId)
    .map((r) => (r.payload as { text: string }).text)
    .join("");

/** A message the slow agent takes about 20 s to echo (400 characters, 2 every 100 ms). */
const LONG = `please echo ${"abcdefghij".repeat(40)}`;

describe("local cloud: cancel", () => {
  it("a running submission on a worker stops mid-stream, keeps its partial output and settles cancelled; the one queued behind it is cancelled at once; the next runs", async () => {
    suite.dumpLogsOnFailure();
    const instance = `run-${uid()}`;
    const running = await post(`/agents/slow/${instance}`, { kind: "user", body: LONG });
    expect(running.status).toBe(202);
    const { submissionId, conversationId } = running.json as { submissionId: string; conversationId: string };
    const queued = await post(`/agents/slow/${instance}`, { kind: "user", body: "behind" });
    expect(queued.status).toBe(202);

    // Mid-stream: some deltas are in the log, the reply is far from done.
    await waitFor("the first deltas", async () => ((await suite.store.readRecords(conversationId)).filter((r) => r.kind === "assistant_text_delta").length >= 3 ? true : undefined));
    expect((await suite.store.getSubmission(queued.json.submissionId)).status).toBe("queued");
    const queuedAnswer = await cancel("slow", instance, queued.json.submissionId);
    expect(queuedAnswer.status).toBe(200);
    expect(queuedAnswer.json).toEqual({ submissionId: queued.json.submissionId, status: "cancelled", outcome: byRequest() });

    const stopping = await cancel("slow", instance, submissionId, "user pressed stop");
    expect(stopping.status).toBe(202);
    expect(stopping.json).toEqual({ submissionId, status: "cancelling" });
    const row = await settled(submissionId);
    expect(row.outcome).toMatchObject(byRequest("user pressed stop"));
    expect(row.attemptCount, "stopped by its own worker, not by a lease expiry and a second attempt").toBe(1);
    expect((await settled(queued.json.submissionId)).outcome).toMatchObject(byRequest());

    const records = await suite.store.readRecords(conversationId);
    const partial = textOf(records, submissionId);
    expect(partial.length, "the partial output stays in the log").toBeGreaterThan(0);
    expect(`You said: ${LONG}`.startsWith(partial) && partial.length < LONG.length, `partial: ${partial}`).toBe(true);
    const completed = records.find((r) => r.kind === "assistant_message_completed" && r.submissionId === submissionId);
    expect(JSON.stringify(completed?.payload)).toContain('"stopReason":"aborted"');
    expect(settlementsOf(records, submissionId)).toEqual([expect.objectContaining(byRequest("user pressed stop"))]);
    expect(records.filter((r) => r.submissionId === queued.json.submissionId).map((r) => r.kind), "the cancelled-behind one never ran").toEqual(["submission_settled"]);
    // Again: the same outcome (200); the stream shows the settlements in order and ends.
    expect((await cancel("slow", instance, submissionId)).json).toMatchObject({ status: "cancelled", outcome: byRequest("user pressed stop") });

    const next = await post(`/agents/slow/${instance}?wait=true`, { kind: "user", body: "short" });
    expect(next.status).toBe(200);
    expect(next.json).toMatchObject({ status: "succeeded" });
    const streamed = await followSse(`${suite.cloud.url}/agents/slow/${instance}`).finish();
    expect(streamed.filter((e) => e.event === "submission_settled").map((e) => JSON.parse(e.data).submissionId)).toEqual([
      submissionId,
      queued.json.submissionId,
      next.json.submissionId,
    ]);
    // A settled submission is not cancelled: 409.
    expect((await cancel("slow", instance, next.json.submissionId)).status).toBe(409);
  }, 90_000);

  it("a queued head (its worker not yet there) settles at once; the next runs", async () => {
    suite.dumpLogsOnFailure();
    const instance = `queued-${uid()}`;
    // Both workers busy with long streams in other sessions, so the head stays queued.
    const busyInstances = [1, 2].map((n) => `busy-${n}-${instance}`);
    const busy = await Promise.all(busyInstances.map((i) => post(`/agents/slow/${i}`, { kind: "user", body: LONG })));
    await waitFor("both workers streaming", async () => {
      const subs = await Promise.all(busy.map((b) => suite.store.getSubmission(b.json.submissionId)));
      return subs.every((s) => s.status === "running") ? true : undefined;
    });
    const head = await post(`/agents/assistant/${instance}`, { kind: "user", body: "never mind" });
    const answer = await cancel("assistant", instance, head.json.submissionId, "changed my mind");
    expect(answer.status).toBe(200);
    expect(answer.json.outcome).toEqual(byRequest("changed my mind"));
    const records = await suite.store.readRecords(head.json.conversationId);
    expect(records.map((r) => r.kind)).toEqual(["conversation_created", "submission_settled"]);
    // Free the workers again (their streams stop at the next lease renewal).
    for (const [i, b] of busy.entries()) expect((await cancel("slow", busyInstances[i]!, b.json.submissionId)).status).toBe(202);
    const next = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "now" });
    expect(next.json).toMatchObject({ status: "succeeded" });
    expect(textOf(await suite.store.readRecords(head.json.conversationId), next.json.submissionId)).toBe("You said: now");
  });

  it("an http function killed during a cancel (fault phase cancel_reserved): the sweeper writes the cancel's settlement; the next runs", async () => {
    suite.dumpLogsOnFailure();
    const instance = `crash-${uid()}`;
    const match = `k-${uid()}`;
    const crashing = await suite.cloud.extraFunction("http", {
      HARNESS_FAULTS: JSON.stringify([{ phase: "cancel_reserved", action: "crash", match }]),
    });
    // A queued head no worker has been told of (admitted through the store: no doorbell).
    const key = { agent: "assistant", instance, session: "default" };
    const head = (await suite.store.admitSubmission({ id: `${match}-1`, conversationId: `conv-${match}`, sessionKey: key, input: { kind: "user", body: "a" }, createdAt: Date.now() })).submission;
    const behind = (await suite.store.admitSubmission({ id: `${match}-2`, conversationId: `conv-${match}`, sessionKey: key, input: { kind: "user", body: "b" }, createdAt: Date.now() })).submission;
    const died = await fetch(`${crashing.url}/agents/assistant/${instance}/submissions/${head.id}/cancel`, { method: "POST", body: '{"reason":"mid-cancel crash"}' }).then(
      (res) => res.status,
      () => "connection lost",
    );
    expect(died === "connection lost" || (typeof died === "number" && died >= 500), String(died)).toBe(true);
    expect((await suite.store.getSubmission(head.id)).status, "reserved, its record not written").toBe("terminalizing");
    expect(settlementsOf(await suite.store.readRecords(head.conversationId), head.id)).toEqual([]);

    // The sweeper finishes a reservation whose settler is gone (after the settlement grace).
    const row = await waitFor(
      "the sweeper to settle the cancelled head",
      async () => {
        await suite.cloud.sweep();
        const sub = await suite.store.getSubmission(head.id);
        return sub.status === "settled" ? sub : undefined;
      },
      30_000,
    );
    expect(row.outcome).toMatchObject(byRequest("mid-cancel crash"));
    expect(settlementsOf(await suite.store.readRecords(head.conversationId), head.id)).toEqual([byRequest("mid-cancel crash")]);
    expect((await settled(behind.id)).outcome).toMatchObject({ status: "succeeded" });
  }, 90_000);

  it("a waiting submission (parked on its children) settles at once; the next runs", async () => {
    suite.dumpLogsOnFailure();
    const instance = `waiting-${uid()}`;
    const first = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "hello" });
    expect(first.json.status).toBe("succeeded");
    // What a subagent run leaves: a parent parked on its children, built through the store (the
    // harness has no subagent tool yet).
    const key = { agent: "assistant", instance, session: "default" };
    const parent = (await suite.store.admitSubmission({ id: `parent-${uid()}`, conversationId: first.json.conversationId, sessionKey: key, input: { kind: "user", body: "spawn" }, createdAt: Date.now() })).submission;
    const attemptId = `att-${uid()}`;
    // The worker may claim it first (its doorbell was never rung, but the sweep is off): claim it here.
    await suite.store.claimSubmission({ submissionId: parent.id, attemptId, ownerId: "test", leaseExpiresAt: Date.now() + 60_000 });
    await suite.store.waitSubmission({ submissionId: parent.id, attemptId, waitUntil: Date.now() + 3_600_000, pendingCalls: ["call-1"] });
    expect((await suite.store.getSubmission(parent.id)).status).toBe("waiting");

    const answer = await cancel("assistant", instance, parent.id, "took too long");
    expect(answer.status).toBe(200);
    expect(answer.json.outcome).toEqual(byRequest("took too long"));
    expect((await suite.store.getSubmission(parent.id)).status).toBe("settled");
    expect(settlementsOf(await suite.store.readRecords(first.json.conversationId), parent.id)).toEqual([byRequest("took too long")]);
    const next = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "after" });
    expect(next.json).toMatchObject({ status: "succeeded" });
  });
});
