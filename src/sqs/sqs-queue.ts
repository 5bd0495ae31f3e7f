import { randomUUID } from "node:crypto";
import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Doorbell, WorkQueue } from "../ports/queue.ts";
import { encodeDoorbell } from "./doorbell-body.ts";
import { messageGroupId } from "./message-group.ts";

/** SQS's ceiling on a message's visibility timeout (12 hours). */
export const MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

export interface SqsWorkQueueOptions {
  client: SQSClient;
  /** URL of the FIFO work queue (content-based deduplication is not needed and not relied on). */
  queueUrl: string;
}

/**
 * The serverless shape's work queue: doorbells on an SQS FIFO queue, one message group per
 * session (see {@link messageGroupId}), consumed by the worker Lambda through its event source
 * (`runtime.deliver`), so this is only the sending side.
 *
 * Every ring gets a fresh deduplication id. FIFO queues drop a message whose deduplication id
 * was seen in the last 5 minutes; a re-ring of the same submission (the next head after a
 * settlement, a continuation, a sweeper re-ring) must never be swallowed, and duplicates are
 * harmless because the consumer claims with a compare-and-set (DESIGN §3.1).
 *
 * `delayMs` is ignored: FIFO queues accept no per-message delay (only a queue-wide one). The
 * engine never needs it on the hot path (a transient backoff sleeps before ringing); a consumer
 * that wants a doorbell back later makes its own message invisible for that long instead.
 */
export class SqsWorkQueue implements WorkQueue {
  readonly client: SQSClient;
  readonly queueUrl: string;

  constructor(options: SqsWorkQueueOptions) {
    if (!options.queueUrl) throw new Error("SqsWorkQueue: queueUrl is required");
    this.client = options.client;
    this.queueUrl = options.queueUrl;
  }

  async ring(doorbell: Doorbell, _options?: { delayMs?: number }): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: encodeDoorbell(doorbell),
        MessageGroupId: messageGroupId(doorbell.group),
        MessageDeduplicationId: randomUUID(),
      }),
    );
  }

  /** Makes a received message of this queue visible again after `delayMs` (0: at once). */
  changeVisibility(receiptHandle: string, delayMs: number): Promise<void> {
    return changeMessageVisibility(this.client, this.queueUrl, receiptHandle, delayMs);
  }
}

/**
 * Sets a received message's visibility timeout to `delayMs`, rounded up to whole seconds and
 * capped at 12 hours: it becomes receivable again that long from now.
 */
export async function changeMessageVisibility(
  client: SQSClient,
  queueUrl: string,
  receiptHandle: string,
  delayMs: number,
): Promise<void> {
  await client.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: queueUrl,
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: visibilitySeconds(delayMs),
    }),
  );
}

/** Milliseconds → a valid visibility timeout in seconds (rounded up, 0 … 12 h). */
export function visibilitySeconds(delayMs: number): number {
  if (!Number.isFinite(delayMs) || delayMs <= 0) return 0;
  return Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(delayMs / 1000));
}
