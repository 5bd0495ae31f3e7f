/**
 * The serverless shape end to end on the local cloud: the exact handler modules of `src/lambda/`
 * run in child processes against DynamoDB Local and fauxqs (SQS FIFO + S3), fed by a local SQS
 * event source and reached through a local streaming function URL. No AWS call is mocked; faults
 * are real (killed processes, an unreachable endpoint, throttling answered on the wire).
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { HARNESS_ENV } from "../../../src/lambda/env.ts";
import type { LocalFunction, LocalFunctionUrl } from "../../../dev/local-cloud/function-host.ts";
import { toSqsEvent } from "../../../dev/local-cloud/sqs-event-source.ts";
import type { Submission } from "../../../src/store/submission.ts";
import { encodeDoorbell } from "../../../src/sqs/doorbell-body.ts";
import { messageGroupId } from "../../../src/sqs/message-group.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { inStatus, requestJson, sleep, uid, waitFor } from "../../support/local-cloud-http.ts";
import { followSse, type SseFollower } from "../../support/sse-follower.ts";
import { startThrottleProxy, type ThrottleProxy } from "../../../dev/local-cloud/throttle-proxy.ts";

const LEASE_MS = 2_000;
const WORKER_TIMEOUT_MS = 6_000;
/** Yield once less than this is left: an invocation works for about 2 s, then continues. */
const YIELD_MARGIN_MS = 4_000;

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
let proxy: ThrottleProxy;
let sqs: SQSClient;

// Started first: every function reaches DynamoDB through it.
beforeAll(async () => {
  proxy = await startThrottleProxy(process.env.AWS_ENDPOINT_URL_DYNAMODB!);
  sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
});
afterAll(async () => {
  await proxy?.close();
  sqs?.destroy();
});

const suite = useLocalCloud(() => ({
  agentsModule,
  workers: 2,
  workerTimeoutMs: WORKER_TIMEOUT_MS,
  // Far above the lease: a message that comes back sooner does so because the worker lowered
  // its visibility (the heartbeat), not because the queue default ran out.
  queueVisibilityTimeoutMs: 30_000,
  streamMaxMs: 3_000,
  // Room for ?wait=true's 60 s: the function URL ends a request at this timeout, and the wait answers 3 s before it.
  httpTimeoutMs: 65_000,
  sweeperRateMs: false,
  env: {
    HARNESS_LEASE_MS: String(LEASE_MS),
    HARNESS_YIELD_MARGIN_MS: String(YIELD_MARGIN_MS),
    HARNESS_STALE_QUEUED_MS: "500",
    POWERTOOLS_METRICS_DISABLED: "false",
  },
  // Every function reaches DynamoDB through the proxy (behind the IAM gate), which throttles when told to.
  upstream: { dynamodb: proxy.url },
}));

const dumpLogsOnFailure = () => suite.dumpLogsOnFailure(150);


/** POSTs like `curl -d` (form content type, JSON body). */
const post = (path: string, body: unknown, base = suite.cloud.url) => requestJson(`${base}${path}`, "POST", body);

const waitSettled = (submissionId: string, timeoutMs = 30_000): Promise<Submission> => inStatus(suite.store, submissionId, "settled", timeoutMs);

const settledPayload = async (conversationId: string, submissionId: string) => {
  const settled = (await suite.store.readRecords(conversationId)).filter(
    (r) => r.kind === "submission_settled" && r.submissionId === submissionId,
  );
  expect(settled).toHaveLength(1);
  return (settled[0] as Extract<ConversationRecord, { kind: "submission_settled" }>).payload;
};

/** The attempt ids of a submission's records, in log order, must form contiguous blocks. */
function expectNoInterleaving(records: ConversationRecord[], submissionId: string): string[] {
  const order: string[] = [];
  for (const r of records) {
    if (r.submissionId !== submissionId || !r.attemptId) continue;
    if (order.at(-1) === r.attemptId) continue;
    expect(order, `attempt ${r.attemptId} resumed after another attempt wrote`).not.toContain(r.attemptId);
    order.push(r.attemptId);
  }
  return order;
}

/** Every record of the log reached the SSE reader exactly once, in order. */
async function expectSseSawEverything(follower: SseFollower, conversationId: string): Promise<void> {
  const events = await follower.finish();
  const ids = events.map((e) => e.id);
  expect(new Set(ids).size, "no record twice").toBe(ids.length);
  expect([...ids].sort(), "in order").toEqual(ids);
  const log = await suite.store.readRecords(conversationId);
  expect(ids).toEqual(log.map((r) => r.id));
  for (const e of events) expect(JSON.parse(e.data).kind).toBe(e.event);
}

const deliveriesOf = (submissionId: string) =>
  suite.cloud.deliveries.filter((d) => d.queue === "work" && d.body.includes(`"submissionId":${JSON.stringify(submissionId)}`));

async function queueEmpty(): Promise<true | undefined> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: suite.cloud.queueUrl,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    }),
  );
  const a = out.Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages) + Number(a.ApproximateNumberOfMessagesNotVisible) === 0 ? true : undefined;
}

/** Sends a doorbell straight to a queue, as a duplicate delivery or SQS's redrive would. */
async function sendDoorbell(queueUrl: string, submissionId: string, sessionKey: string, group = messageGroupId(sessionKey)) {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: encodeDoorbell({ submissionId, group: sessionKey }),
      MessageGroupId: group,
      MessageDeduplicationId: randomUUID(),
    }),
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** An http function deployed with an unreachable SQS endpoint (admission cannot ring). */
let deadQueueHttp: Promise<LocalFunctionUrl> | undefined;
const httpWithoutQueue = async () =>
  (deadQueueHttp ??= freePort().then((port) =>
    suite.cloud.extraFunction("http", { AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${port}` }),
  ));

describe("local cloud: http + worker through SQS FIFO", () => {
  it("runs the quickstart conversation: tool call, streaming, ?wait=true, steer refused when idle", async () => {
    dumpLogsOnFailure();
    const instance = `demo-${uid()}`;
    const first = await post(`/agents/assistant/${instance}`, { kind: "user", body: "what time is it?" });
    expect(first.status).toBe(202);
    expect(Object.keys(first.json).sort()).toEqual(["conversationId", "submissionId"]);
    const follower = followSse(`${suite.cloud.url}/agents/assistant/${instance}`);
    expect((await waitSettled(first.json.submissionId)).attemptCount).toBe(1);

    const second = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "hello there" });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ conversationId: first.json.conversationId, status: "succeeded" });

    const steer = await post(`/agents/assistant/${instance}/steer`, { body: "answer in French" });
    expect(steer.status).toBe(409);
    expect(steer.json.code).toBe("no_run_in_flight");

    await expectSseSawEverything(follower, first.json.conversationId);
    const records = await suite.store.readRecords(first.json.conversationId);
    const kinds = records.map((r) => r.kind);
    expect(kinds).toContain("assistant_tool_call");
    expect(kinds).toContain("tool_outcome");
    expect(kinds).toContain("assistant_text_delta");
    const text = records
      .filter((r) => r.kind === "assistant_text_delta")
      .map((r) => (r.payload as { text: string }).text)
      .join("");
    expect(text).toMatch(/The time is \d{4}-\d\d-\d\dT/);
    expect(text).toContain("You said: hello there");
    expect(follower.connections).toBeGreaterThanOrEqual(1);
    // The agents module's own observers and interceptors run in the worker, beside its telemetry.
    const submission = first.json.submissionId as string;
    expect(suite.logs.some((l) => l.startsWith("[worker") && l.includes(`fixture-observer settled ${submission}`)), "observer").toBe(true);
    expect(suite.logs.some((l) => l.startsWith("[worker") && l.includes(`fixture-interceptor tool clock ${submission}`)), "interceptor").toBe(true);
  });

  it("gives http and sweeper the agent names instead of the agents module; http answers 404 for any other agent", async () => {
    dumpLogsOnFailure();
    for (const role of ["http", "sweeper"] as const) {
      expect(suite.cloud.functionEnv(role)[HARNESS_ENV.agentNames], role).toBe("assistant,recall,stepper,fragile");
    }
    expect(suite.cloud.functionEnv("worker")[HARNESS_ENV.agentNames]).toBeUndefined();
    const unknown = await post(`/agents/nobody/demo-${uid()}`, { kind: "user", body: "hi" });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe("unknown_agent");
  });

  it("runs nothing twice when SQS delivers one doorbell several times", async () => {
    dumpLogsOnFailure();
    const instance = `dup-${uid()}`;
    const dispatchId = `d-${uid()}`;
    const body = { kind: "user", body: "steps=1 sleep=600", dispatchId };
    const { json } = await post(`/agents/stepper/${instance}`, body);
    const follower = followSse(`${suite.cloud.url}/agents/stepper/${instance}`);
    const sessionKey = `stepper/${instance}/default`;
    // Duplicates: SQS redelivery, a client retrying the dispatch, a sweeper re-ring.
    await sendDoorbell(suite.cloud.queueUrl, json.submissionId, sessionKey);
    expect((await post(`/agents/stepper/${instance}`, body)).status).toBe(202);
    await sendDoorbell(suite.cloud.queueUrl, json.submissionId, sessionKey);
    const sub = await waitSettled(json.submissionId);
    await waitFor("the work queue to drain", queueEmpty);
    expect(sub.attemptCount).toBe(1);
    expect(deliveriesOf(json.submissionId).length, "the duplicates were delivered").toBeGreaterThanOrEqual(3);
    expect(await settledPayload(json.conversationId, json.submissionId)).toMatchObject({ status: "succeeded" });
    const records = await suite.store.readRecords(json.conversationId);
    expect(records.filter((r) => r.kind === "tool_outcome")).toHaveLength(1);
    expect(records.filter((r) => r.kind === "user_message")).toHaveLength(1);
    expectNoInterleaving(records, json.submissionId);
    await expectSseSawEverything(follower, json.conversationId);
  });

  it("recovers a worker killed mid-turn within about one lease", async () => {
    dumpLogsOnFailure();
    const instance = `kill-${uid()}`;
    const { json } = await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=1 sleep=3000" });
    const follower = followSse(`${suite.cloud.url}/agents/stepper/${instance}`);
    await waitFor("the tool call", async () =>
      (await suite.store.readRecords(json.conversationId)).some((r) => r.kind === "assistant_tool_call") ? true : undefined,
    );
    await sleep(200); // inside the tool's 3 s
    const victim = suite.cloud.workers.find((w) => w.busy);
    expect(victim, "a worker is running the turn").toBeDefined();
    const held = suite.cloud.deliveries.filter((d) => d.function === victim!.name).at(-1)!;
    expect(JSON.parse(held.body).submissionId).toBe(json.submissionId);
    const starts = victim!.coldStarts;
    const firstAttempt = (await suite.store.getSubmission(json.submissionId)).attemptId;
    const killedAt = Date.now();
    expect(victim!.kill("SIGKILL")).toBe(true);

    // The doorbell comes back when its last visibility extension runs out: within one lease
    // (plus rounding to whole seconds and scheduling), not after the queue's 30 s default.
    const redelivered = await waitFor("the doorbell's redelivery", async () =>
      suite.cloud.deliveries.find((d) => d.messageId === held.messageId && d.at > killedAt),
    );
    expect(redelivered.receiveCount).toBeGreaterThan(held.receiveCount);
    expect(redelivered.at - killedAt).toBeLessThan(LEASE_MS + 2_500);
    // A worker takes it over once the dead attempt's lease has expired (a redelivery that finds
    // the lease still live comes back after its remaining time).
    const recoveredAt = await waitFor("a new attempt", async () => {
      const sub = await suite.store.getSubmission(json.submissionId);
      return sub.attemptId !== firstAttempt && sub.attemptId ? Date.now() : undefined;
    });
    expect(recoveredAt - killedAt).toBeLessThan(LEASE_MS + 6_000);
    const sub = await waitSettled(json.submissionId);
    expect(sub.attemptCount).toBe(2);
    expect(await settledPayload(json.conversationId, json.submissionId)).toMatchObject({ status: "succeeded" });
    const records = await suite.store.readRecords(json.conversationId);
    const attempts = expectNoInterleaving(records, json.submissionId);
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    // The interrupted tool call was closed with a synthesized outcome, not run again.
    const outcomes = records.filter((r) => r.kind === "tool_outcome");
    expect(outcomes).toHaveLength(1);
    expect((outcomes[0]!.payload as { isError: boolean }).isError).toBe(true);
    await expectSseSawEverything(follower, json.conversationId);
    // The dead container was replaced by a new one (a cold start).
    await waitFor("a restarted container", async () => (victim!.coldStarts > starts ? true : undefined));
  });

  it("continues a run across three invocations with one attempt charged", async () => {
    dumpLogsOnFailure();
    const instance = `long-${uid()}`;
    const { json } = await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=4 sleep=1200" });
    const follower = followSse(`${suite.cloud.url}/agents/stepper/${instance}`);
    const sub = await waitSettled(json.submissionId, 60_000);
    expect(sub.attemptCount).toBe(1);
    expect(await settledPayload(json.conversationId, json.submissionId)).toMatchObject({ status: "succeeded" });
    const records = await suite.store.readRecords(json.conversationId);
    const invocations = expectNoInterleaving(records, json.submissionId);
    expect(invocations.length).toBeGreaterThanOrEqual(3);
    expect(records.filter((r) => r.kind === "tool_outcome").map((r) => (r.payload as { isError: boolean }).isError)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    const text = records
      .filter((r) => r.kind === "assistant_text_delta")
      .map((r) => (r.payload as { text: string }).text)
      .join("");
    expect(text).toContain("done after 4 steps");
    await expectSseSawEverything(follower, json.conversationId);
  });

  it("survives DynamoDB throttling injected on the wire", async () => {
    dumpLogsOnFailure();
    const instance = `throttle-${uid()}`;
    proxy.throttleEvery = 4;
    const throttledBefore = proxy.throttled;
    try {
      const { status, json } = await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=2 sleep=100" });
      expect(status).toBe(202);
      const follower = followSse(`${suite.cloud.url}/agents/stepper/${instance}`);
      const sub = await waitSettled(json.submissionId);
      expect(sub.attemptCount).toBe(1);
      expect(await settledPayload(json.conversationId, json.submissionId)).toMatchObject({ status: "succeeded" });
      expect(proxy.throttled - throttledBefore).toBeGreaterThan(5);
      await expectSseSawEverything(follower, json.conversationId);
    } finally {
      proxy.throttleEvery = 0;
    }
  });

  it("never runs one session on two workers at once, even with doorbells racing in other groups", async () => {
    dumpLogsOnFailure();
    const instance = `race-${uid()}`;
    const { json } = await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=2 sleep=800" });
    const follower = followSse(`${suite.cloud.url}/agents/stepper/${instance}`);
    const sessionKey = `stepper/${instance}/default`;
    // Misrouted duplicates in other message groups: FIFO no longer serializes them, so both
    // workers hold a doorbell for this submission at the same time.
    for (const g of ["race-a", "race-b", "race-c"]) await sendDoorbell(suite.cloud.queueUrl, json.submissionId, sessionKey, `${g}-${instance}`);
    const sub = await waitSettled(json.submissionId);
    await waitFor("the work queue to drain", queueEmpty);
    expect(sub.attemptCount).toBe(1);
    const holders = new Set(deliveriesOf(json.submissionId).map((d) => d.function));
    expect(holders, "both workers held a doorbell of this submission").toEqual(new Set(["worker-1", "worker-2"]));
    const records = await suite.store.readRecords(json.conversationId);
    expectNoInterleaving(records, json.submissionId);
    expect(records.filter((r) => r.kind === "tool_outcome")).toHaveLength(2);
    expect(await settledPayload(json.conversationId, json.submissionId)).toMatchObject({ status: "succeeded" });
    await expectSseSawEverything(follower, json.conversationId);
  });

  it("hashes the message group of a session key longer than 128 characters", async () => {
    dumpLogsOnFailure();
    const instance = `${"x:".repeat(100)}${uid()}`;
    expect(`assistant/${instance}/default`.length).toBeGreaterThan(128);
    const { status, json } = await post(`/agents/assistant/${instance}`, { kind: "user", body: "hi" });
    expect(status).toBe(202);
    await waitSettled(json.submissionId);
    expect(await settledPayload(json.conversationId, json.submissionId)).toMatchObject({ status: "succeeded" });
  });
});

describe("local cloud: recovery of lost doorbells", () => {
  it("recovers an admission that could not reach SQS by retrying the same dispatch id", async () => {
    dumpLogsOnFailure();
    const dead = await httpWithoutQueue();
    const instance = `noq-${uid()}`;
    const body = { kind: "user", body: "steps=1 sleep=50", dispatchId: `d-${uid()}` };
    const failed = await post(`/agents/stepper/${instance}`, body, dead.url);
    expect(failed.status).toBe(503);
    expect(failed.json.code).toBe("queue_unavailable");
    const queued = await suite.store.getSubmission(body.dispatchId);
    expect(queued).toMatchObject({ status: "queued", attemptCount: 0 });
    await sleep(1_500);
    expect((await suite.store.getSubmission(body.dispatchId)).status).toBe("queued"); // no doorbell, nothing runs

    const retried = await post(`/agents/stepper/${instance}`, body);
    expect(retried.status).toBe(202);
    expect(retried.json.submissionId).toBe(body.dispatchId);
    await waitSettled(body.dispatchId);
    expect(await settledPayload(queued.conversationId, body.dispatchId)).toMatchObject({ status: "succeeded" });
  });

  it("recovers an admission that could not reach SQS by the sweeper", async () => {
    dumpLogsOnFailure();
    const dead = await httpWithoutQueue();
    const instance = `sweep-${uid()}`;
    const failed = await post(`/agents/stepper/${instance}`, { kind: "user", body: "steps=0", dispatchId: `s-${uid()}` }, dead.url);
    expect(failed.status).toBe(503);
    const [stranded] = (await suite.store.listRunnable()).filter((s) => s.sessionKey.instance === instance);
    expect(stranded).toBeDefined();
    await sleep(700); // older than HARNESS_STALE_QUEUED_MS
    const report = (await suite.cloud.sweep()) as { rerung: number };
    expect(report.rerung).toBeGreaterThanOrEqual(1);
    await waitSettled(stranded!.id);
    expect(await settledPayload(stranded!.conversationId, stranded!.id)).toMatchObject({ status: "succeeded" });
  });

  /** Ticks of the schedule's dlq target until one drained a dead letter (a short poll may miss one). */
  async function drainUntilEmpty() {
    await waitFor("the dlq drain to handle the dead letter", async () => {
      const report = (await suite.cloud.drainDeadLetters()) as { handled: number };
      return report.handled > 0 ? true : undefined;
    });
  }

  it("the dead-letter function, on the schedule, re-rings healthy work and settles only spent work", async () => {
    dumpLogsOnFailure();
    const dead = await httpWithoutQueue();

    // Healthy: attempts left. SQS's receive count says nothing about that.
    const healthyInstance = `dlq-ok-${uid()}`;
    await post(`/agents/fragile/${healthyInstance}`, { kind: "user", body: "steps=1 sleep=50", dispatchId: `h-${uid()}` }, dead.url);
    const [healthy] = (await suite.store.listRunnable()).filter((s) => s.sessionKey.instance === healthyInstance);
    expect(healthy).toMatchObject({ status: "queued", attemptCount: 0 });
    await sendDoorbell(suite.cloud.deadLetterQueueUrl, healthy!.id, `fragile/${healthyInstance}/default`);
    await drainUntilEmpty();
    await waitSettled(healthy!.id);
    expect(await settledPayload(healthy!.conversationId, healthy!.id)).toMatchObject({ status: "succeeded" });
    await waitFor("the rerung alarm metric", async () =>
      suite.logs.some((l) => l.startsWith("[dlq]") && l.includes('"DeadLetterRerung"')) ? true : undefined,
    );

    // Spent: two attempts charged and lost (as two crashed workers would leave it).
    const spentInstance = `dlq-spent-${uid()}`;
    await post(`/agents/fragile/${spentInstance}`, { kind: "user", body: "steps=1 sleep=50", dispatchId: `x-${uid()}` }, dead.url);
    const [spent] = (await suite.store.listRunnable()).filter((s) => s.sessionKey.instance === spentInstance);
    for (const error of ["worker crashed", "model unreachable"]) {
      const claimed = await suite.store.claimSubmission({
        submissionId: spent!.id,
        attemptId: `crashed-${uid()}`,
        ownerId: "a-worker-that-died",
        leaseExpiresAt: Date.now() + LEASE_MS,
      });
      await suite.store.releaseSubmission({ submissionId: spent!.id, attemptId: claimed.attemptId!, lastError: error });
    }
    await sendDoorbell(suite.cloud.deadLetterQueueUrl, spent!.id, `fragile/${spentInstance}/default`);
    await drainUntilEmpty();
    const settled = await waitSettled(spent!.id);
    expect(settled.attemptCount).toBe(3);
    const payload = await settledPayload(spent!.conversationId, spent!.id);
    expect(payload).toMatchObject({ status: "failed", errorCode: "attempt_budget_exhausted" });
    expect(payload.error).toContain("last error: model unreachable");
    // Settled from the claim: the agent never ran.
    const kinds = (await suite.store.readRecords(spent!.conversationId)).map((r) => r.kind);
    expect(kinds).not.toContain("assistant_message_started");
  });
});

describe("local cloud: the worker never throws", () => {
  let worker: LocalFunction;
  let scratchUrl: string;
  let scratchArn: string;

  beforeAll(async () => {
    const port = await freePort();
    // The scratch queue is no queue of the stack: its role could not receive from it (the IAM gate
    // refuses), so this worker reaches fauxqs directly; what is tested is its answer to a dead store.
    worker = await suite.cloud.extraFunction("worker", { AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${port}`, AWS_ENDPOINT_URL_SQS: process.env.AWS_ENDPOINT_URL_SQS! });
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${suite.cloud.tableName.replace(/-table$/, "")}-scratch.fifo`,
        Attributes: { FifoQueue: "true", VisibilityTimeout: "30" },
      }),
    );
    scratchUrl = created.QueueUrl!;
    const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: scratchUrl, AttributeNames: ["QueueArn"] }));
    scratchArn = attrs.Attributes!.QueueArn!;
  }, 120_000);

  async function receiveOne(waitSeconds: number) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: scratchUrl,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ["All"],
      }),
    );
    return out.Messages ?? [];
  }

  it("reports a store failure as a batch item failure with a short visibility, and stays up", async () => {
    dumpLogsOnFailure();
    await sendDoorbell(scratchUrl, "sub-unreachable", "stepper/x/default");
    const messages = await receiveOne(2);
    expect(messages).toHaveLength(1);
    const pid = worker.pid;
    const result = await worker.invoke(toSqsEvent(messages, scratchArn, process.env.AWS_REGION ?? "us-east-1"));
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: messages[0]!.MessageId }] });
    expect(worker.pid).toBe(pid);
    // Back after the failure backoff (1 s at the first receive), not the queue's 30 s.
    const started = Date.now();
    const again = await receiveOne(10);
    expect(again.map((m) => m.MessageId)).toEqual([messages[0]!.MessageId]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(again[0]!.Attributes?.ApproximateReceiveCount).toBe("2");
  });

  it("acknowledges a body that is not a doorbell (retrying could not help)", async () => {
    dumpLogsOnFailure();
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: scratchUrl,
        MessageBody: "not a doorbell",
        MessageGroupId: "poison",
        MessageDeduplicationId: randomUUID(),
      }),
    );
    let messages = await receiveOne(2);
    // The previous test's message may still be in the queue.
    while (messages.length > 0 && messages[0]!.Body !== "not a doorbell") messages = await receiveOne(2);
    const result = await worker.invoke(toSqsEvent(messages, scratchArn, process.env.AWS_REGION ?? "us-east-1"));
    expect(result).toEqual({ batchItemFailures: [] });
  });
});
