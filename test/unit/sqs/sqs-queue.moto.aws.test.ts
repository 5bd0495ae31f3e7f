/**
 * The visibility cap against a second SQS emulator: moto's server counts a message's 12-hour
 * visibility maximum from its receipt and refuses a change past what is left, as SQS does (fauxqs
 * accepts anything up to 12 h). A doorbell received a moment ago and retried 12 h later (a
 * provider's `Retry-After`) is accepted, capped by the time held; the uncapped value is refused.
 */
import { ChangeMessageVisibilityCommand, CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consumeSqsBatch } from "../../../src/sqs/batch-consumer.ts";
import { encodeDoorbell } from "../../../src/sqs/doorbell-body.ts";
import { changeMessageVisibility } from "../../../src/sqs/sqs-queue.ts";
import { type Moto, motoAvailable, startMoto } from "../../support/moto.ts";

if (!motoAvailable) console.warn("moto visibility-cap tests skipped: python3 -m moto.server is not available on this machine");

const TWELVE_HOURS_MS = 12 * 3600_000;
let moto: Moto;
let sqs: SQSClient;
let queueUrl: string;
beforeAll(async () => {
  if (!motoAvailable) return;
  moto = await startMoto();
  sqs = new SQSClient({ endpoint: moto.url, region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } });
  queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: "work.fifo", Attributes: { FifoQueue: "true" } }))).QueueUrl!;
}, 90_000);
afterAll(async () => {
  sqs?.destroy();
  await moto?.stop();
});

/** Sends a doorbell and receives it (30 s visibility): its receipt handle and receive time. */
async function received(submissionId: string): Promise<{ handle: string; at: number; body: string; messageId: string }> {
  const body = encodeDoorbell({ submissionId, group: "a/b/default" });
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageGroupId: submissionId, MessageDeduplicationId: submissionId }));
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 30, WaitTimeSeconds: 1 }));
  const message = got.Messages?.[0];
  if (!message) throw new Error("nothing received");
  return { handle: message.ReceiptHandle!, at: Date.now(), body: message.Body!, messageId: message.MessageId! };
}

const held = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!motoAvailable)("visibility changes within SQS's 12 hours from the receipt (moto)", () => {
  it("moto refuses the uncapped 12 h after a message was held a moment; the capped change is accepted", { timeout: 60_000 }, async () => {
    const m = await received("held-a-moment");
    await held(2_500);
    await expect(sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: m.handle, VisibilityTimeout: 43_200 }))).rejects.toThrow(/beyond the limit/);
    await expect(changeMessageVisibility(sqs, queueUrl, m.handle, TWELVE_HOURS_MS, m.at)).resolves.toBeUndefined();
  });

  it("the consumer's heartbeat and a 12-hour retry of a doorbell: no change refused", { timeout: 60_000 }, async () => {
    const m = await received("retried-12h");
    const event = {
      Records: [{ messageId: m.messageId, receiptHandle: m.handle, body: m.body, attributes: { ApproximateReceiveCount: "1" }, messageAttributes: {}, md5OfBody: "", eventSource: "aws:sqs", eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:work.fifo", awsRegion: "us-east-1" }],
    } as unknown as SQSEvent;
    const errors: unknown[] = [];
    const response = await consumeSqsBatch(event, {
      client: sqs,
      queueUrlOf: async () => queueUrl,
      leaseMs: 30_000,
      handle: async () => {
        await held(2_500);
        return { kind: "retry", delayMs: TWELVE_HOURS_MS };
      },
      onError: (err) => errors.push(err),
    });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: m.messageId }]);
    expect(errors, "no visibility change refused").toEqual([]);
  });
});
