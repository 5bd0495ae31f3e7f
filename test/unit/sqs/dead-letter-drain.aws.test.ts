import { randomUUID } from "node:crypto";
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { Doorbell } from "../../../src/ports/queue.ts";
import { drainDeadLetters } from "../../../src/sqs/dead-letter-drain.ts";
import { encodeDoorbell } from "../../../src/sqs/doorbell-body.ts";

// fauxqs (SQS FIFO), started by the aws project's global setup.
const client = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
let queueUrl: string;

beforeEach(async () => {
  const created = await client.send(
    new CreateQueueCommand({
      QueueName: `dead-letter-drain-${randomUUID().slice(0, 8)}.fifo`,
      Attributes: { FifoQueue: "true", ContentBasedDeduplication: "false" },
    }),
  );
  queueUrl = created.QueueUrl!;
});

afterAll(() => client.destroy());

async function send(body: string, group: string) {
  await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: randomUUID() }));
}

async function messagesLeft(): Promise<number> {
  const res = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
  );
  return Number(res.Attributes!.ApproximateNumberOfMessages) + Number(res.Attributes!.ApproximateNumberOfMessagesNotVisible);
}

const bell = (id: string, group = "a/b/default"): Doorbell => ({ submissionId: id, group });

describe("drainDeadLetters", () => {
  it("hands every dead letter to the handler in its group's order and deletes it", async () => {
    for (const id of ["a1", "a2", "a3"]) await send(encodeDoorbell(bell(id)), "a/b/default");
    await send(encodeDoorbell(bell("b1", "a/c/default")), "a/c/default");
    const seen: Doorbell[] = [];
    const report = await drainDeadLetters({
      client,
      queueUrl,
      visibilityTimeoutMs: 30_000,
      handle: async (d) => void seen.push(d),
      onError: (err) => {
        throw err;
      },
      shouldStop: () => false,
    });
    expect(report).toEqual({ received: 4, handled: 4, failed: 0 });
    expect(seen.filter((d) => d.group === "a/b/default").map((d) => d.submissionId)).toEqual(["a1", "a2", "a3"]);
    expect(seen.map((d) => d.submissionId)).toContain("b1");
    expect(await messagesLeft()).toBe(0);
  });

  it("deletes a body that is not a doorbell, and leaves one whose handling failed for a later drain", async () => {
    await send("not a doorbell", "x");
    await send(encodeDoorbell(bell("fails", "y")), "y");
    const errors: string[] = [];
    const report = await drainDeadLetters({
      client,
      queueUrl,
      visibilityTimeoutMs: 1_000,
      handle: async () => {
        throw new Error("store unreachable");
      },
      onError: (err, _m, phase) => void errors.push(`${phase}: ${(err as Error).message}`),
      shouldStop: () => false,
    });
    expect(report).toEqual({ received: 2, handled: 0, failed: 2 });
    expect(errors.sort()).toEqual(["decode: malformed doorbell: body is not JSON", "handle: store unreachable"]);
    expect(await messagesLeft(), "the failed one stays; the poison one is gone").toBe(1);

    // Visible again after its timeout: the next tick's drain handles it.
    await new Promise((r) => setTimeout(r, 1_500));
    const handled: string[] = [];
    const next = await drainDeadLetters({
      client,
      queueUrl,
      visibilityTimeoutMs: 30_000,
      handle: async (d) => void handled.push(d.submissionId),
      onError: (err) => {
        throw err;
      },
      shouldStop: () => false,
    });
    expect(next.handled).toBe(1);
    expect(handled).toEqual(["fails"]);
  });

  it("receives nothing once told to stop (the invocation is out of time)", async () => {
    await send(encodeDoorbell(bell("late")), "a/b/default");
    const report = await drainDeadLetters({
      client,
      queueUrl,
      visibilityTimeoutMs: 30_000,
      handle: async () => {},
      onError: () => {},
      shouldStop: () => true,
    });
    expect(report).toEqual({ received: 0, handled: 0, failed: 0 });
    expect(await messagesLeft()).toBe(1);
  });
});
