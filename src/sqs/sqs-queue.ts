import { randomUUID } from "node:crypto";
import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Doorbell, WorkQueue } from "../ports/queue.ts";
import { encodeDoorbell } from "./doorbell-body.ts";
import { doorbellGroupId } from "./message-group.ts";

/** SQS's ceiling on a message's visibility timeout (12 hours). */
export const MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

export interface SqsWorkQueueOptions {
  client: SQSClient;
  /** URL of the FIFO work queue (content-based deduplication is not needed and not relied on). */
  queueUrl: string;
}

/**
 * The serverless shape's work queue: doorbells on an SQS FIFO queue, each in a message group of
 * its own (see {@link doorbellGroupId}: a message left in flight by a dead invocation must not
 * hold its session), consumed by the worker Lambda through its event source (`runtime.deliver`),
 * so this is only the sending side.
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
        MessageGroupId: doorbellGroupId(doorbell.group),
        MessageDeduplicationId: randomUUID(),
      }),
    );
  }

  /**
   * Makes a received message of this queue visible again after `delayMs` (0: at once); see
   * {@link changeMessageVisibility} for `heldSinceMs`.
   */
  changeVisibility(receiptHandle: string, delayMs: number, heldSinceMs?: number): Promise<void> {
    return changeMessageVisibility(this.client, this.queueUrl, receiptHandle, delayMs, heldSinceMs);
  }
}

/**
 * Slack taken off SQS's 12-hour cap for the time a message may have been held before its handler
 * saw it (the event source's receive, a batching window of up to 5 minutes, a cold start).
 */
export const RECEIPT_SLACK_MS = 6 * 60_000;

/**
 * Sets a received message's visibility timeout to `delayMs`, rounded up to whole seconds and
 * capped so that SQS accepts it: SQS counts its 12-hour maximum from the message's receipt and
 * refuses any value beyond what is left of it. `heldSinceMs` is when the handler got the message
 * (epoch ms; default now): the cap is 12 h minus the time held since, minus
 * {@link RECEIPT_SLACK_MS} for the time between the receive and the handler. A doorbell capped
 * short of its delay comes back early and is put off again by its consumer.
 */
export async function changeMessageVisibility(
  client: SQSClient,
  queueUrl: string,
  receiptHandle: string,
  delayMs: number,
  heldSinceMs?: number,
): Promise<void> {
  await client.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: queueUrl,
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: visibilitySeconds(delayMs, heldSinceMs === undefined ? 0 : Date.now() - heldSinceMs),
    }),
  );
}

/**
 * Milliseconds → a valid visibility timeout in seconds (rounded up), for a message held `heldMs`
 * since its handler got it: at most what is left of SQS's 12 hours from the receipt (less
 * {@link RECEIPT_SLACK_MS}), and never below 0.
 */
export function visibilitySeconds(delayMs: number, heldMs = 0): number {
  if (!Number.isFinite(delayMs) || delayMs <= 0) return 0;
  const leftMs = MAX_VISIBILITY_SECONDS * 1000 - Math.max(0, heldMs) - RECEIPT_SLACK_MS;
  return Math.max(0, Math.min(Math.floor(leftMs / 1000), Math.ceil(delayMs / 1000)));
}
