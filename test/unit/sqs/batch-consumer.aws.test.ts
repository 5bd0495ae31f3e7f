import { randomUUID } from "node:crypto";
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { successfulIds, toSqsEvent } from "../../../dev/local-cloud/sqs-event-source.ts";
import type { DoorbellOutcome } from "../../../src/ports/queue.ts";
import { consumeSqsBatch, failureBackoffMs } from "../../../src/sqs/batch-consumer.ts";
import { encodeDoorbell } from "../../../src/sqs/doorbell-body.ts";

const client = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
let queueUrl: string;
let queueArn: string;

// A fresh queue per test: messages a test leaves invisible must not reach the next one.
beforeEach(async () => {
  const created = await client.send(
    new CreateQueueCommand({
      QueueName: `consumer-test-${randomUUID().slice(0, 8)}.fifo`,
      Attributes: { FifoQueue: "true", VisibilityTimeout: "30" },
    }),
  );
  queueUrl = created.QueueUrl!;
  const attrs = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }));
  queueArn = attrs.Attributes!.QueueArn!;
});

afterAll(() => client.destroy());

/** Sends `bodies` (one group each) and receives them as one SQS event. */
function eventOf(...bodies: string[]) {
  return eventWithVisibility(undefined, ...bodies);
}

async function eventWithVisibility(visibilitySeconds: number | undefined, ...bodies: string[]) {
  for (const body of bodies) {
    await client.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageGroupId: randomUUID(), MessageDeduplicationId: randomUUID() }),
    );
  }
  const out = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      VisibilityTimeout: visibilitySeconds,
      MessageSystemAttributeNames: ["All"],
    }),
  );
  expect(out.Messages).toHaveLength(bodies.length);
  return toSqsEvent(out.Messages!, queueArn, "us-east-1");
}

const doorbell = (id: string) => encodeDoorbell({ submissionId: id, group: "a/b/default" });

async function receiveWithin(seconds: number): Promise<string[]> {
  const out = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: seconds }));
  return (out.Messages ?? []).map((m) => m.MessageId!);
}

const options = (handle: (id: string) => Promise<DoorbellOutcome>, errors: unknown[] = []) => ({
  client,
  queueUrlOf: async () => queueUrl,
  leaseMs: 1_000,
  handle: (d: { submissionId: string }) => handle(d.submissionId),
  failureDelayMs: () => 0,
  onError: (err: unknown) => errors.push(err),
});

describe("consumeSqsBatch", () => {
  it("acks handled doorbells, fails retries and errors (visible again after their delay), and fails the rest of a batch after a failure", async () => {
    const event = await eventOf(doorbell("ok"), doorbell("retry"), doorbell("after"));
    const errors: unknown[] = [];
    const seen: string[] = [];
    const result = await consumeSqsBatch(
      event,
      options(async (id) => {
        seen.push(id);
        return id === "retry" ? { kind: "retry", delayMs: 0 } : { kind: "ack" };
      }, errors),
    );
    expect(seen).toEqual(["ok", "retry"]);
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([event.Records[1]!.messageId, event.Records[2]!.messageId]);
    // The retried one is visible again at once (delay 0); "after" keeps its 30 s; "ok" too (the
    // event source, not the consumer, deletes acknowledged messages).
    expect(await receiveWithin(1)).toEqual([event.Records[1]!.messageId]);
    expect(errors).toEqual([]);
  });

  it("never throws: a handler error becomes a batch item failure with the backoff visibility", async () => {
    const event = await eventOf(doorbell("boom"));
    const errors: unknown[] = [];
    const result = await consumeSqsBatch(event, {
      ...options(async () => {
        throw new Error("store unreachable");
      }, errors),
      failureDelayMs: (n: number) => (n === 1 ? 1_000 : 99_000),
    });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: event.Records[0]!.messageId }]);
    expect(String(errors[0])).toContain("store unreachable");
    const started = Date.now();
    expect(await receiveWithin(5)).toEqual([event.Records[0]!.messageId]);
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("acknowledges a body that is not a doorbell, and fails a record whose queue is unknown", async () => {
    const event = await eventOf("garbage");
    const errors: unknown[] = [];
    expect(await consumeSqsBatch(event, options(async () => ({ kind: "ack" }), errors))).toEqual({ batchItemFailures: [] });
    expect(errors).toHaveLength(1);
    const unknown = await consumeSqsBatch(await eventOf(doorbell("x")), {
      ...options(async () => ({ kind: "ack" })),
      queueUrlOf: async () => {
        throw new Error("no such queue");
      },
    });
    expect(unknown.batchItemFailures).toHaveLength(1);
  });

  it("holds the message while a long delivery runs (visibility heartbeat)", async () => {
    // Received with a 1 s visibility: only the heartbeat keeps it hidden for 2.5 s.
    const event = await eventWithVisibility(1, doorbell("slow"));
    let during: string[] = [];
    await consumeSqsBatch(
      event,
      options(async () => {
        await new Promise((r) => setTimeout(r, 2_500)); // 2.5 leases
        during = await receiveWithin(0);
        return { kind: "retry", delayMs: 0 };
      }),
    );
    expect(during).toEqual([]);
    expect(await receiveWithin(1)).toContain(event.Records[0]!.messageId);
  });
});

describe("local event source", () => {
  it("deletes only what a partial batch response does not name, and nothing when the response is malformed", () => {
    const messages = [{ MessageId: "a" }, { MessageId: "b" }, { MessageId: "c" }];
    expect([...successfulIds(messages, { batchItemFailures: [{ itemIdentifier: "b" }] })]).toEqual(["a", "c"]);
    expect([...successfulIds(messages, null)]).toEqual(["a", "b", "c"]);
    expect([...successfulIds(messages, { batchItemFailures: [] })]).toEqual(["a", "b", "c"]);
    expect([...successfulIds(messages, { batchItemFailures: [{ itemIdentifier: "zzz" }] })]).toEqual([]);
    expect([...successfulIds(messages, { batchItemFailures: "nope" })]).toEqual([]);
  });

  it("backs failures off by receive count, capped", () => {
    expect([1, 2, 3, 4, 5, 6, 30].map(failureBackoffMs)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(failureBackoffMs(Number.NaN)).toBe(1_000);
  });
});
