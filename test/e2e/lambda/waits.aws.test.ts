/**
 * Durable waits in the serverless shape (issue 22, ADR 0025): the handlers of `src/lambda/` on the
 * local cloud (DynamoDB Local, fauxqs SQS FIFO + S3), reached through the local function URL. A
 * call that waits for a person's approval or a callback, and a delayed message, hold nothing while
 * they wait: no lease, no worker invocation, no message of their own in the queue. A decision or
 * a callback's answer over the function URL wakes the submission once.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import type { Submission } from "../../../src/store/submission.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { inStatus as inStatusOf, requestJson, sleep, uid } from "../../support/local-cloud-http.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/wait-agents.ts", import.meta.url));
const runs = mkdtempSync(join(tmpdir(), "waits-local-cloud-"));
const suite = useLocalCloud({
  agentsModule,
  workers: 2,
  workerTimeoutMs: 30_000,
  streamMaxMs: 3_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "3000", HARNESS_STALE_QUEUED_MS: "1000", HARNESS_TEST_WAIT_DIR: runs },
});

let sqs: SQSClient;
beforeAll(() => {
  sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
});
afterAll(() => {
  sqs?.destroy();
  rmSync(runs, { recursive: true, force: true });
});

const call = (method: "GET" | "POST", path: string, body?: unknown) => requestJson(`${suite.cloud.url}${path}`, method, body, "application/json");
const post = (path: string, body?: unknown) => call("POST", path, body);
const inStatus = (id: string, status: Submission["status"], timeoutMs?: number) => inStatusOf(suite.store, id, status, timeoutMs);

/** How many times a tool call ran (each run leaves a line, whatever process ran it). */
const ranTimes = (callId: string) => (existsSync(join(runs, `ran-${callId}`)) ? readFileSync(join(runs, `ran-${callId}`), "utf8").trim().split("\n").length : 0);
const deliveriesOf = (submissionId: string) => suite.cloud.deliveries.filter((d) => d.body.includes(`"submissionId":${JSON.stringify(submissionId)}`)).length;
const kinds = (records: ConversationRecord[]) => records.map((r) => r.kind).filter((k) => k !== "assistant_text_delta" && k !== "assistant_message_started");

async function queueCounts(): Promise<{ visible: number; all: number }> {
  const a = (
    await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: suite.cloud.queueUrl,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
      }),
    )
  ).Attributes!;
  const visible = Number(a.ApproximateNumberOfMessages);
  return { visible, all: visible + Number(a.ApproximateNumberOfMessagesNotVisible) + Number(a.ApproximateNumberOfMessagesDelayed) };
}

/**
 * Watches a waiting submission for a while (several lease periods, a sweep between): it stays
 * waiting with no lease, no worker is invoked for it and the queue holds nothing (the tests of this
 * file run one at a time, so any message would be its own).
 */
async function holdsNothing(submissionId: string, forMs = 4_000): Promise<void> {
  const delivered = deliveriesOf(submissionId);
  const end = Date.now() + forMs;
  let looked = 0;
  while (Date.now() < end || looked < 2) {
    await sleep(1_000);
    if (looked === 1) await suite.cloud.sweep();
    const sub = await suite.store.getSubmission(submissionId);
    expect(sub.status).toBe("waiting");
    expect(sub.leaseExpiresAt, "a waiting submission holds no lease").toBeUndefined();
    expect(await queueCounts(), "no message in the queue").toEqual({ visible: 0, all: 0 });
    expect(deliveriesOf(submissionId), "no worker invocation while it waits").toBe(delivered);
    looked++;
  }
}

describe("local cloud: durable waits", () => {
  it("two approvals in one batch: the submission waits holding nothing; approved runs once, denied never; one wake after the last decision", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    const tag = `a${uid()}`;
    const admitted = await post(`/agents/support/${tag}`, { kind: "user", body: `${tag}: refund 240 and refund 500` });
    expect(admitted.status).toBe(202);
    const { submissionId, conversationId } = admitted.json as { submissionId: string; conversationId: string };
    const parked = await inStatus(submissionId, "waiting");
    expect(parked.pendingCalls).toEqual([`${tag}-refund-0`, `${tag}-refund-1`]);
    expect(deliveriesOf(submissionId)).toBe(1);
    const pending = await call("GET", `/agents/support/${tag}/approvals`);
    expect(pending.json.approvals.map((a: { callId: string; args: unknown }) => [a.callId, a.args])).toEqual([
      [`${tag}-refund-0`, { amount: 240 }],
      [`${tag}-refund-1`, { amount: 500 }],
    ]);
    await holdsNothing(submissionId);

    const approved = await post(`/agents/support/${tag}/submissions/${submissionId}/approvals/${tag}-refund-0`, { approved: true });
    expect(approved).toMatchObject({ status: 200, json: { approved: true } });
    await holdsNothing(submissionId, 2_000);
    const denied = await post(`/agents/support/${tag}/submissions/${submissionId}/approvals/${tag}-refund-1`, { approved: false, reason: "over the limit" });
    expect(denied).toMatchObject({ status: 200, json: { approved: false, reason: "over the limit" } });
    expect((await post(`/agents/support/${tag}/submissions/${submissionId}/approvals/${tag}-refund-1`, { approved: true })).json).toMatchObject({ code: "already_decided" });

    const settled = await inStatus(submissionId, "settled");
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(deliveriesOf(submissionId), "one invocation to ask, one to resume").toBe(2);
    expect([ranTimes(`${tag}-refund-0`), ranTimes(`${tag}-refund-1`)]).toEqual([1, 0]);
    const log = await suite.store.readRecords(conversationId);
    expect(kinds(log)).toEqual([
      "conversation_created",
      "user_message",
      "assistant_tool_call",
      "assistant_tool_call",
      "assistant_message_completed",
      "approval_requested",
      "approval_requested",
      "approval_decided",
      "approval_decided",
      "tool_outcome",
      "tool_started",
      "tool_outcome",
      "assistant_message_completed",
      "submission_settled",
    ]);
    expect(JSON.stringify(log.findLast((r) => r.kind === "assistant_message_completed")!.payload)).toContain(
      "done: refunded $240 | denied by a reviewer: over the limit",
    );
  });

  it("an approval beside a task call in one batch: one wait holding nothing, the decision and the child's outcome answer it, woken once after both", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    const tag = `k${uid()}`;
    const admitted = await post(`/agents/support/${tag}`, { kind: "user", body: `${tag}: refund 250 and check` });
    expect(admitted.status).toBe(202);
    const { submissionId, conversationId } = admitted.json as { submissionId: string; conversationId: string };
    const parked = await inStatus(submissionId, "waiting");
    expect([...parked.pendingCalls!].sort()).toEqual([`${tag}-check`, `${tag}-refund-0`]);
    expect(parked.waitingFor?.map((e) => e.kind).sort()).toEqual(["approval", "child"]);
    expect(parked.leaseExpiresAt).toBeUndefined();

    const approved = await post(`/agents/support/${tag}/submissions/${submissionId}/approvals/${tag}-refund-0`, { approved: true });
    expect(approved).toMatchObject({ status: 200, json: { approved: true } });
    await sleep(1_500);
    const stillWaiting = await suite.store.getSubmission(submissionId);
    expect(stillWaiting.status, "the child still runs: still waiting").toBe("waiting");
    expect(stillWaiting.pendingCalls).toEqual([`${tag}-check`]);
    expect(ranTimes(`${tag}-refund-0`), "the approved call runs when the submission resumes").toBe(0);
    expect(deliveriesOf(submissionId), "the decision alone wakes nothing").toBe(1);

    writeFileSync(join(runs, `gate-${tag}`), "go");
    const settled = await inStatus(submissionId, "settled");
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(ranTimes(`${tag}-refund-0`)).toBe(1);
    expect(deliveriesOf(submissionId), "one invocation to ask, one to resume").toBe(2);
    const log = await suite.store.readRecords(conversationId);
    expect(log.filter((r) => r.kind === "approval_decided")).toHaveLength(1);
    expect(log.filter((r) => r.kind === "tool_started")).toHaveLength(1);
    const outcomes = log.filter((r) => r.kind === "tool_outcome").map((r) => JSON.stringify(r.payload));
    expect(outcomes).toHaveLength(2);
    expect(outcomes.join()).toContain(`checked ${tag}`);
    expect(outcomes.join()).toContain("refunded $250");
    const final = JSON.stringify(log.findLast((r) => r.kind === "assistant_message_completed")!.payload);
    expect(final).toContain("done: ");
    expect(final).toContain("refunded $250");
    expect(final).toContain(`checked ${tag}`);
    expect(log.filter((r) => r.kind === "submission_settled" && r.submissionId === submissionId)).toHaveLength(1);
  });

  it("an approval nobody decides expires at a sweep: denied (approval expired), nothing runs", { timeout: 60_000 }, async () => {
    suite.dumpLogsOnFailure();
    const tag = `e${uid()}`;
    const { submissionId } = (await post(`/agents/support/${tag}`, { kind: "user", body: `${tag}: void it` })).json as { submissionId: string };
    await inStatus(submissionId, "waiting");
    await sleep(2_500);
    await suite.cloud.sweep();
    const settled = await inStatus(submissionId, "settled");
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(ranTimes(`${tag}-void`)).toBe(0);
    const log = await suite.store.readRecords(settled.conversationId);
    expect(log.find((r) => r.kind === "approval_decided")?.payload).toMatchObject({ approved: false, expired: true });
    expect((await post(`/agents/support/${tag}/submissions/${submissionId}/approvals/${tag}-void`, { approved: true })).status).toBe(409);
  });

  it("a callback answered with a result and one answered with an error: start ran once, the wait held nothing, the answer is the call's outcome", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    for (const answer of [{ result: { label: "1Z999" } }, { error: "warehouse closed" }]) {
      const tag = `c${uid()}`;
      const { submissionId, conversationId } = (await post(`/agents/support/${tag}`, { kind: "user", body: `${tag}: where is my label` })).json as {
        submissionId: string;
        conversationId: string;
      };
      await inStatus(submissionId, "waiting");
      const callbackId = readFileSync(join(runs, `callback-${tag}-label`), "utf8");
      expect(callbackId).toMatch(/^[A-Za-z0-9_-]{22,}$/);
      await holdsNothing(submissionId, 2_000);
      expect(await post(`/callbacks/${callbackId}`, answer)).toEqual({ status: 200, json: { status: "answered", replayed: false } });
      expect((await post(`/callbacks/${callbackId}`, answer)).json).toEqual({ status: "answered", replayed: true });
      const settled = await inStatus(submissionId, "settled");
      expect(settled.outcome).toMatchObject({ status: "succeeded" });
      expect(readFileSync(join(runs, `started-${tag}-label`), "utf8").trim().split("\n"), "start ran once").toHaveLength(1);
      const outcome = (await suite.store.readRecords(conversationId)).find((r) => r.kind === "tool_outcome")!;
      expect((outcome.payload as { isError?: boolean }).isError ?? false, "an error answer is an error result").toBe("error" in answer);
      expect(JSON.stringify(outcome.payload)).toContain("error" in answer ? "warehouse closed" : "1Z999");
      expect(deliveriesOf(submissionId)).toBe(2);
    }
  });

  it("callbacks behind their own bearer token (the construct's `callbacks`): the callback token answers, the API's does not; it opens no other route", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    // As the construct configures the http function with `urlAuthType: NONE` and `callbacks` (the
    // values come from `secrets` references at cold start: test/e2e/lambda/secrets.aws.test.ts).
    const http = await suite.cloud.extraFunction("http", {
      HARNESS_URL_AUTH: "NONE",
      HARNESS_ALLOW_UNAUTHENTICATED: "",
      HARNESS_BEARER_TOKEN: "api-token",
      HARNESS_CALLBACK_TOKEN: "callback-token",
    });
    const tag = `t${uid()}`;
    const send = (path: string, token: string | undefined, body: unknown) =>
      fetch(`${http.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
    const admitted = await send(`/agents/support/${tag}`, "api-token", { kind: "user", body: `${tag}: where is my label` });
    expect(admitted.status).toBe(202);
    const { submissionId } = (await admitted.json()) as { submissionId: string };
    expect((await send(`/agents/support/${tag}`, "callback-token", { kind: "user", body: "hello" })).status, "the callback token opens no other route").toBe(401);
    await inStatus(submissionId, "waiting");
    const callbackId = readFileSync(join(runs, `callback-${tag}-label`), "utf8");
    const answer = { result: { label: "1Z999" } };
    for (const token of [undefined, "api-token", "wrong"]) {
      const refused = await send(`/callbacks/${callbackId}`, token, answer);
      expect(refused.status, `token ${token}`).toBe(401);
      expect(await refused.json()).toEqual({ error: "unauthorized", code: "unauthorized" });
    }
    expect((await suite.store.getSubmission(submissionId)).status, "a refused answer changes nothing").toBe("waiting");
    const accepted = await send(`/callbacks/${callbackId}`, "callback-token", answer);
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toEqual({ status: "answered", replayed: false });
    expect((await inStatus(submissionId, "settled")).outcome).toMatchObject({ status: "succeeded" });
  });

  it("a delayed message holds nothing until its time, then joins its session and runs; one cancelled before its time never runs", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    const tag = `d${uid()}`;
    const notBefore = new Date(Date.now() + 5_000).toISOString();
    const later = await post(`/agents/support/${tag}`, { kind: "user", body: `${tag}: remind me`, notBefore });
    expect(later.status).toBe(202);
    const dropped = await post(`/agents/support/${tag}`, { kind: "user", body: `${tag}: never`, notBefore });
    const { submissionId } = later.json as { submissionId: string };
    const cancelled = await post(`/agents/support/${tag}/submissions/${dropped.json.submissionId}/cancel`, { reason: "not needed" });
    expect(cancelled.status).toBe(200);
    await holdsNothing(submissionId, 3_000);
    expect(deliveriesOf(submissionId)).toBe(0);
    while (Date.now() < Date.parse(notBefore)) await sleep(200);
    await suite.cloud.sweep();
    const settled = await inStatus(submissionId, "settled");
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(deliveriesOf(submissionId)).toBe(1);
    const droppedRow = await suite.store.getSubmission(dropped.json.submissionId);
    expect(droppedRow.outcome).toMatchObject({ status: "failed", errorCode: "cancelled" });
    expect(deliveriesOf(dropped.json.submissionId)).toBe(0);
    const log = await suite.store.readRecords(settled.conversationId);
    expect(log.filter((r) => r.kind === "user_message").map((r) => (r.payload as { body: string }).body)).toEqual([`${tag}: remind me`]);
  });
});
