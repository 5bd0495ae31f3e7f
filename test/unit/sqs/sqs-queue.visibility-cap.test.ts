/**
 * SQS counts a message's 12-hour visibility maximum from its receipt and refuses a change past
 * what is left of it (moto's server does too: `sqs-queue.moto.aws.test.ts`; fauxqs accepts
 * anything up to 12 h). This fake client enforces it without waiting hours, for the consumer's two
 * changes: the heartbeat's lease and a retry's delay (a provider's `Retry-After` may ask for up to
 * 12 h) after 14 minutes of work.
 */
import { ChangeMessageVisibilityCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it, vi } from "vitest";
import { consumeSqsBatch } from "../../../src/sqs/batch-consumer.ts";
import { encodeDoorbell } from "../../../src/sqs/doorbell-body.ts";

const TWELVE_HOURS_S = 12 * 3600;

/** Answers ChangeMessageVisibility as SQS does: refused beyond 12 h from the receipt. */
class ReceiptCapSqs {
  readonly refused: number[] = [];
  readonly accepted: number[] = [];
  readonly receivedAt: number;
  constructor(receivedAt: number) {
    this.receivedAt = receivedAt;
  }
  async send(command: unknown): Promise<unknown> {
    if (!(command instanceof ChangeMessageVisibilityCommand)) throw new Error("unexpected command");
    const seconds = command.input.VisibilityTimeout!;
    const heldS = (Date.now() - this.receivedAt) / 1000;
    if (seconds > TWELVE_HOURS_S - heldS) {
      this.refused.push(seconds);
      const err = new Error(`Value ${seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]`);
      err.name = "InvalidParameterValue";
      throw err;
    }
    this.accepted.push(seconds);
    return {};
  }
}

const event: SQSEvent = {
  Records: [
    {
      messageId: "m-1",
      receiptHandle: "r-1",
      body: encodeDoorbell({ submissionId: "s-1", group: "a/b/default" }),
      attributes: { ApproximateReceiveCount: "1" } as SQSEvent["Records"][number]["attributes"],
      messageAttributes: {},
      md5OfBody: "",
      eventSource: "aws:sqs",
      eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:q.fifo",
      awsRegion: "us-east-1",
    },
  ],
};

afterEach(() => vi.useRealTimers());

describe("visibility changes stay within SQS's 12 hours from the receipt", () => {
  it.for([
    ["received 2 s before the handler, a 12-hour retry at once", 2_000, 0],
    ["a 12-hour retry after 14 minutes of work", 2_000, 14 * 60_000],
  ] as const)("%s", async ([, beforeHandlerMs, workMs]) => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const sqs = new ReceiptCapSqs(Date.now() - beforeHandlerMs);
    const errors: unknown[] = [];
    const response = await consumeSqsBatch(event, {
      client: sqs as unknown as SQSClient,
      queueUrlOf: async () => "https://sqs.local/q.fifo",
      leaseMs: 30_000,
      handle: async () => {
        vi.setSystemTime(Date.now() + workMs);
        return { kind: "retry", delayMs: 12 * 3600_000 };
      },
      onError: (err) => errors.push(err),
    });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: "m-1" }]);
    expect(sqs.refused, "no change refused").toEqual([]);
    expect(errors).toEqual([]);
    // The heartbeat's lease, then the retry's delay: as long as SQS still allows.
    expect(sqs.accepted[0]).toBe(30);
    const retry = sqs.accepted.at(-1)!;
    expect(retry).toBeGreaterThan(TWELVE_HOURS_S - (beforeHandlerMs + workMs) / 1000 - 10 * 60);
    expect(retry).toBeLessThanOrEqual(TWELVE_HOURS_S - (beforeHandlerMs + workMs) / 1000);
  });
});
