/**
 * Durable subagents in the serverless shape: the handlers of `src/lambda/` on the local cloud
 * (DynamoDB Local, fauxqs SQS FIFO + S3). A parent's children are submissions of their own, run
 * by the workers; the parent parks `waiting` and the last child's settlement rings it.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { childAddress } from "../../../src/conversation/task-names.ts";
import type { Submission } from "../../../src/store/submission.ts";
import { THREE_CHILDREN_PARENT_LOG } from "../../support/subagent-family.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/subagent-agents.ts", import.meta.url));
let sqs: SQSClient;

const suite = useLocalCloud({
  agentsModule,
  workers: 2,
  workerTimeoutMs: 20_000,
  streamMaxMs: 3_000,
  // Room for ?wait=true's 60 s: the function URL ends a request at this timeout, and the wait answers 3 s before it.
  httpTimeoutMs: 65_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "3000", HARNESS_STALE_QUEUED_MS: "500" },
});

beforeAll(() => {
  sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
});

afterAll(() => sqs?.destroy());

const dumpLogsOnFailure = () => suite.dumpLogsOnFailure(150);

const uid = () => randomUUID().slice(0, 8);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${suite.cloud.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const kinds = (records: ConversationRecord[]) =>
  records.map((r) => r.kind).filter((k) => k !== "assistant_text_delta" && k !== "assistant_message_started");
const deliveriesOf = (submissionId: string) =>
  suite.cloud.deliveries.filter((d) => d.body.includes(`"submissionId":${JSON.stringify(submissionId)}`));

describe("local cloud: durable subagents", () => {
  it("a parent with three parallel children settles once with all three outcomes", { timeout: 90_000 }, async () => {
    dumpLogsOnFailure();
    const instance = `p-${uid()}`;
    const answer = await post(`/agents/lead/${instance}?wait=true`, { kind: "user", body: "spawn: alpha, beta, gamma" });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ status: "succeeded" });
    const { submissionId, conversationId } = answer.json as { submissionId: string; conversationId: string };

    const parent = await suite.store.getSubmission(submissionId);
    expect(parent).toMatchObject({ status: "settled", attemptCount: 1 });
    const log = await suite.store.readRecords(conversationId);
    expect(kinds(log)).toEqual(THREE_CHILDREN_PARENT_LOG);
    const final = log.findLast((r) => r.kind === "assistant_message_completed")!;
    for (const item of ["alpha", "beta", "gamma"]) expect(JSON.stringify(final.payload)).toContain(`researcher on: ${item}`);

    const children: Submission[] = [];
    for (const item of ["alpha", "beta", "gamma"]) {
      const address = childAddress({ submissionId, instance }, `call-${item}`);
      const child = await suite.store.getSubmission(address.submissionId);
      expect(child).toMatchObject({ status: "settled", depth: 1, parentSubmissionId: submissionId, parentCallId: `call-${item}` });
      children.push(child);
    }
    // The parent ran twice (the spawn, the resume): one doorbell each, none while it waited. The
    // first came before any child existed, so with two in all the second is the wake. (No time
    // window: on a fast machine the whole family runs within a second.)
    const deliveries = deliveriesOf(submissionId).map((d) => d.at).sort((a, b) => a - b);
    expect(deliveries, "no invocation for the parent while its children ran").toHaveLength(2);
    expect(deliveries[0]).toBeLessThanOrEqual(Math.min(...children.map((c) => c.createdAt)));
  });

  it("while the parent waits: no worker invocation for it, no message of its own in the queue, its caught-up stream answers 204", { timeout: 90_000 }, async () => {
    dumpLogsOnFailure();
    const instance = `w-${uid()}`;
    const gates = `/tmp/h-sub-gates/${instance}`;
    mkdirSync(gates, { recursive: true });
    const admitted = await post(`/agents/lead/${instance}`, { kind: "user", body: `spawn: gate:${gates}/one, gate:${gates}/two` });
    expect(admitted.status).toBe(202);
    const { submissionId, conversationId } = admitted.json as { submissionId: string; conversationId: string };
    const deadline = Date.now() + 30_000;
    while ((await suite.store.getSubmission(submissionId)).status !== "waiting") {
      if (Date.now() > deadline) throw new Error("the parent never parked");
      await sleep(100);
    }
    const parked = await suite.store.getSubmission(submissionId);
    expect(parked.leaseExpiresAt, "no lease").toBeUndefined();
    expect(parked.pendingCalls?.length).toBe(2);
    const deliveredBefore = deliveriesOf(submissionId).length;
    expect(deliveredBefore).toBe(1);

    // Several lease periods pass while both children are held running.
    for (let i = 0; i < 4; i++) {
      await sleep(1_500);
      const attrs = (
        await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: suite.cloud.queueUrl,
            AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"],
          }),
        )
      ).Attributes!;
      const messages = Number(attrs.ApproximateNumberOfMessages) + Number(attrs.ApproximateNumberOfMessagesNotVisible) + Number(attrs.ApproximateNumberOfMessagesDelayed);
      expect(messages, "only the two running children's doorbells (each held by its invocation)").toBe(2);
      expect(Number(attrs.ApproximateNumberOfMessages), "nothing waiting to be delivered").toBe(0);
      expect(deliveriesOf(submissionId).length, "no invocation for the waiting parent").toBe(deliveredBefore);
      expect((await suite.store.getSubmission(submissionId)).status).toBe("waiting");
    }
    const log = await suite.store.readRecords(conversationId);
    const caughtUp = await fetch(`${suite.cloud.url}/agents/lead/${instance}?lastEventId=${log.at(-1)!.id}`);
    expect(caughtUp.status, "a waiting, caught-up session: nothing to send, stop reconnecting").toBe(204);

    writeFileSync(`${gates}/one`, "");
    writeFileSync(`${gates}/two`, "");
    const settledAt = Date.now() + 30_000;
    while ((await suite.store.getSubmission(submissionId)).status !== "settled") {
      if (Date.now() > settledAt) throw new Error("the parent never settled");
      await sleep(100);
    }
    expect(deliveriesOf(submissionId).length, "rung once more, by the last child").toBe(deliveredBefore + 1);
    expect((await suite.store.getSubmission(submissionId)).outcome).toMatchObject({ status: "succeeded" });
  });

  it("onParentTerminal leave_running reaches the http function: a parent cancelled there leaves its running child running", { timeout: 90_000 }, async () => {
    dumpLogsOnFailure();
    const instance = `l-${uid()}`;
    const gates = `/tmp/h-sub-gates/${instance}`;
    mkdirSync(gates, { recursive: true });
    const admitted = await post(`/agents/lead/${instance}`, { kind: "user", body: `spawn: gate:${gates}/one` });
    expect(admitted.status).toBe(202);
    const { submissionId } = admitted.json as { submissionId: string };
    const child = childAddress({ submissionId, instance }, `call-gate:${gates}/one`).submissionId;
    const deadline = Date.now() + 30_000;
    while ((await suite.store.getSubmission(submissionId)).status !== "waiting" || (await suite.store.getSubmission(child).catch(() => undefined))?.status !== "running") {
      if (Date.now() > deadline) throw new Error("the parent never parked with its child running");
      await sleep(100);
    }

    const cancelled = await post(`/agents/lead/${instance}/submissions/${submissionId}/cancel`, { reason: "enough" });
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ status: "cancelled" });
    // Past a few lease renewals of the child (a cancel reaches a running child through them).
    await sleep(2_500);
    const running = await suite.store.getSubmission(child);
    expect(running.status, "the child still runs").toBe("running");
    expect(running.cancelRequested ?? false, "no cancel was requested for it").toBe(false);

    writeFileSync(`${gates}/one`, "");
    const settledAt = Date.now() + 30_000;
    while ((await suite.store.getSubmission(child)).status !== "settled") {
      if (Date.now() > settledAt) throw new Error("the child never settled");
      await sleep(100);
    }
    expect((await suite.store.getSubmission(child)).outcome, "it ran to its own end").toMatchObject({ status: "succeeded" });
    expect((await suite.store.getSubmission(submissionId)).outcome).toMatchObject({ status: "failed", errorCode: "cancelled" });
  });
});
