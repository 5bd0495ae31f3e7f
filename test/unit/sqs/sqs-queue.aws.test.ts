import { randomUUID } from "node:crypto";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeDoorbell, MalformedDoorbell } from "../../../src/sqs/doorbell-body.ts";
import { doorbellGroupId, messageGroupId } from "../../../src/sqs/message-group.ts";
import { startMessageHeartbeat } from "../../../src/sqs/message-heartbeat.ts";
import { RECEIPT_SLACK_MS, SqsWorkQueue, visibilitySeconds } from "../../../src/sqs/sqs-queue.ts";

// The SDK sends to the QueueUrl's host unless `endpoint` is explicit; fauxqs's queue URL host
// does not resolve here (notes/local-aws.md §2).
const client = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
let queueUrl: string;
let queue: SqsWorkQueue;

beforeAll(async () => {
  const created = await client.send(
    new CreateQueueCommand({
      QueueName: `sqs-queue-test-${randomUUID().slice(0, 8)}.fifo`,
      Attributes: { FifoQueue: "true", ContentBasedDeduplication: "false", VisibilityTimeout: "30" },
    }),
  );
  queueUrl = created.QueueUrl!;
  queue = new SqsWorkQueue({ client, queueUrl });
});

afterAll(() => client.destroy());

async function receive(waitSeconds = 1, visibility?: number): Promise<Message[]> {
  const out = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitSeconds,
      VisibilityTimeout: visibility,
      MessageSystemAttributeNames: ["All"],
    }),
  );
  return out.Messages ?? [];
}

async function drain(): Promise<Message[]> {
  const all: Message[] = [];
  for (;;) {
    const batch = await receive(0);
    if (batch.length === 0) return all;
    for (const m of batch) {
      all.push(m);
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

describe("SqsWorkQueue", () => {
  it("rings a doorbell whose body is the ids and whose group is its own, named after the session key", async () => {
    await queue.ring({ submissionId: "s-1", group: "assistant/demo/default" });
    await queue.ring({ submissionId: "s-1", group: "assistant/demo/default" });
    const [m, n] = await drain();
    expect(JSON.parse(m!.Body!)).toEqual({ submissionId: "s-1", group: "assistant/demo/default" });
    expect(m!.Attributes?.MessageGroupId).toMatch(/^assistant\/demo\/default~[0-9a-f]{32}$/);
    expect(n!.Attributes?.MessageGroupId).not.toBe(m!.Attributes?.MessageGroupId);
    expect(decodeDoorbell(m!.Body!)).toEqual({ submissionId: "s-1", group: "assistant/demo/default" });
  });

  it("never lets the 5-minute deduplication window swallow a re-ring", async () => {
    const doorbell = { submissionId: "s-2", group: "assistant/demo/dedup" };
    await queue.ring(doorbell);
    await queue.ring(doorbell);
    await queue.ring(doorbell);
    const got = await drain();
    expect(got.map((m) => m.Body)).toEqual(Array(3).fill(JSON.stringify(doorbell)));
    expect(new Set(got.map((m) => m.Attributes?.MessageDeduplicationId)).size).toBe(3);
  });

  it("hashes a session key longer than 128 characters into a stable, valid group id", async () => {
    const longKey = `assistant/${"i".repeat(200)}/default`;
    const group = messageGroupId(longKey);
    expect(group).toMatch(/^h#[0-9a-f]{64}$/);
    expect(messageGroupId(longKey)).toBe(group);
    expect(messageGroupId(`${longKey}x`)).not.toBe(group);
    // Exactly 128 characters still passes through unhashed.
    const edge = `a/${"b".repeat(124)}/c`;
    expect(edge).toHaveLength(128);
    expect(messageGroupId(edge)).toBe(edge);
    // Characters SQS rejects are hashed too.
    expect(messageGroupId("agent/ü/default")).toMatch(/^h#/);
    // A doorbell's own group keeps room for its suffix: a key that fits alone is hashed then.
    expect(doorbellGroupId(edge)).toMatch(/^h#[0-9a-f]{64}~[0-9a-f]{32}$/);
    const short = `a/${"b".repeat(91)}/c`;
    expect(doorbellGroupId(short)).toMatch(new RegExp(`^${short}~[0-9a-f]{32}$`));
    for (const key of [edge, short, longKey, "agent/ü/default", "a/b/c"]) {
      const id = doorbellGroupId(key);
      expect(id.length).toBeLessThanOrEqual(128);
      expect(id).toMatch(/^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+$/);
    }

    await queue.ring({ submissionId: "s-3", group: longKey });
    const [m] = await drain();
    expect(m!.Attributes?.MessageGroupId).toMatch(new RegExp(`^${group}~[0-9a-f]{32}$`));
    expect(decodeDoorbell(m!.Body!).group).toBe(longKey);
  });

  it("a doorbell left in flight blocks no other doorbell, not even one of its own session (ADR 0028)", async () => {
    await queue.ring({ submissionId: "a1", group: "x/a/default" });
    await queue.ring({ submissionId: "a2", group: "x/a/default" });
    await queue.ring({ submissionId: "b1", group: "x/b/default" });
    // a1 is received and never deleted nor changed: an invocation that died before its handler.
    const first = await client.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }),
    );
    expect(decodeDoorbell(first.Messages![0]!.Body!).submissionId).toBe("a1");
    const rest = new Set<string>();
    for (let i = 0; i < 4 && rest.size < 2; i++) {
      const more = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      for (const m of more.Messages ?? []) {
        rest.add(decodeDoorbell(m.Body!).submissionId);
        await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
      }
    }
    expect(rest).toEqual(new Set(["a2", "b1"]));
    await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: first.Messages![0]!.ReceiptHandle! }));
  });

  it("ignores delayMs (FIFO queues have no per-message delay)", async () => {
    await queue.ring({ submissionId: "s-4", group: "assistant/demo/delay" }, { delayMs: 60_000 });
    expect((await receive(1)).map((m) => decodeDoorbell(m.Body!).submissionId)).toEqual(["s-4"]);
    await drain();
  });

  it("changes a received message's visibility: 0 brings it back at once", async () => {
    await queue.ring({ submissionId: "s-5", group: "assistant/demo/vis" });
    const [m] = await receive(1, 30);
    expect(await receive(0)).toEqual([]);
    await queue.changeVisibility(m!.ReceiptHandle!, 0);
    const [again] = await receive(1);
    expect(again!.Attributes?.ApproximateReceiveCount).toBe("2");
    await drain();
  });

  it("a visibility heartbeat lowers the visibility to about one lease and keeps extending it", async () => {
    await queue.ring({ submissionId: "s-6", group: "assistant/demo/heartbeat" });
    const [m] = await receive(1, 30);
    const errors: unknown[] = [];
    const heartbeat = startMessageHeartbeat({
      client,
      queueUrl,
      receiptHandle: m!.ReceiptHandle!,
      leaseMs: 1_000,
      onError: (e) => errors.push(e),
    });
    // Alive for 2.5 leases: still invisible.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await receive(0)).toEqual([]);
    await heartbeat.stop();
    // Stopped (the worker died): back within about one lease, not the queue's 30 s.
    const started = Date.now();
    const [back] = await receive(3);
    expect(back && decodeDoorbell(back.Body!).submissionId).toBe("s-6");
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(errors).toEqual([]);
    await drain();
    const attrs = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["ApproximateNumberOfMessages"] }),
    );
    expect(attrs.Attributes?.ApproximateNumberOfMessages).toBe("0");
  });

  it("rounds visibility up to whole seconds within SQS's bounds", () => {
    expect(visibilitySeconds(0)).toBe(0);
    expect(visibilitySeconds(-5)).toBe(0);
    expect(visibilitySeconds(1)).toBe(1);
    expect(visibilitySeconds(30_250)).toBe(31);
    // SQS's 12 hours count from the receipt: what is left of them, less the receipt slack.
    expect(visibilitySeconds(1e12)).toBe(43_200 - RECEIPT_SLACK_MS / 1000);
    expect(visibilitySeconds(1e12, 2 * 3600_000)).toBe(43_200 - 7_200 - RECEIPT_SLACK_MS / 1000);
    expect(visibilitySeconds(30_000, 2 * 3600_000)).toBe(30);
    expect(visibilitySeconds(30_000, 13 * 3600_000)).toBe(0);
  });

  it("rejects bodies that are not doorbells", () => {
    expect(() => decodeDoorbell("nope")).toThrow(MalformedDoorbell);
    expect(() => decodeDoorbell("{}")).toThrow(MalformedDoorbell);
    expect(() => decodeDoorbell('{"submissionId":"x"}')).toThrow(MalformedDoorbell);
  });

  it("reads a body sent before the group field was renamed (a message in flight across an upgrade)", () => {
    expect(decodeDoorbell('{"submissionId":"x","sessionKey":"a/b/default"}')).toEqual({ submissionId: "x", group: "a/b/default" });
  });
});
