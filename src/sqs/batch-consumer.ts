import type { SQSClient } from "@aws-sdk/client-sqs";
import type { SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { DoorbellOutcome, Doorbell } from "../ports/queue.ts";
import { decodeDoorbell, MalformedDoorbell } from "./doorbell-body.ts";
import { startMessageHeartbeat } from "./message-heartbeat.ts";
import { changeMessageVisibility } from "./sqs-queue.ts";

/** Where in the handling of one record a failure happened (for logs). */
export type ConsumerPhase = "decode" | "queue_url" | "handle" | "visibility";

export interface SqsBatchConsumerOptions {
  client: SQSClient;
  /** The URL of the queue a record came from (`eventSourceARN`). */
  queueUrlOf(eventSourceArn: string): Promise<string>;
  /** The engine's lease: the message's visibility heartbeat keeps it hidden about this long. */
  leaseMs: number;
  /** Handles one doorbell; `retry` makes its message come back after `delayMs`. */
  handle(doorbell: Doorbell, record: SQSRecord): Promise<DoorbellOutcome>;
  /** Visibility after a failure, from the message's receive count. Default {@link failureBackoffMs}. */
  failureDelayMs?(receiveCount: number): number;
  /** Reports a failure (it never propagates). */
  onError?(err: unknown, record: SQSRecord, phase: ConsumerPhase): void;
}

/** Failure backoff: 1 s, 2 s, 4 s … capped at 30 s, by receive count. */
export function failureBackoffMs(receiveCount: number): number {
  const n = Number.isFinite(receiveCount) && receiveCount > 0 ? receiveCount : 1;
  return Math.min(30_000, 1_000 * 2 ** Math.min(n - 1, 5));
}

/**
 * Consumes one SQS event the way the worker and dead-letter functions must (DESIGN §3.1): each
 * message is held by a visibility heartbeat while its doorbell is handled; an `ack` lets the
 * event source delete it; a `retry` sets its visibility to the delay and reports it as a batch
 * item failure; any error does the same with a short backoff. Nothing is ever thrown: an
 * uncaught error would fail the whole batch and block the session's FIFO group for the queue's
 * full visibility timeout. A body that is not a doorbell is reported and acknowledged (no retry
 * could fix it). After a failure the rest of the batch is failed unprocessed, as FIFO event
 * sources require to keep the order.
 */
export async function consumeSqsBatch(event: SQSEvent, options: SqsBatchConsumerOptions): Promise<SQSBatchResponse> {
  const failures: SQSBatchItemFailure[] = [];
  for (const record of event.Records ?? []) {
    if (failures.length > 0 || !(await consumeRecord(record, options))) {
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
}

/** True when the message may be deleted. */
async function consumeRecord(record: SQSRecord, options: SqsBatchConsumerOptions): Promise<boolean> {
  const heldSinceMs = Date.now();
  const report = (err: unknown, phase: ConsumerPhase) => {
    try {
      options.onError?.(err, record, phase);
    } catch {
      // a failing logger must not fail the message
    }
  };
  let doorbell: Doorbell;
  try {
    doorbell = decodeDoorbell(record.body);
  } catch (err) {
    report(err, "decode");
    return err instanceof MalformedDoorbell;
  }
  let queueUrl: string;
  try {
    queueUrl = await options.queueUrlOf(record.eventSourceARN);
  } catch (err) {
    report(err, "queue_url");
    return false;
  }
  const setVisibility = async (delayMs: number) => {
    try {
      await changeMessageVisibility(options.client, queueUrl, record.receiptHandle, delayMs, heldSinceMs);
    } catch (err) {
      report(err, "visibility");
    }
  };

  const heartbeat = startMessageHeartbeat({
    client: options.client,
    queueUrl,
    receiptHandle: record.receiptHandle,
    leaseMs: options.leaseMs,
    heldSinceMs,
    onError: (err) => report(err, "visibility"),
  });
  // Before anything is claimed under it, the message must be one that comes back within a lease
  // should this process die (ADR 0028); a failed first beat is reported and the doorbell handled
  // anyway (the store's lease still fences the run, the sweep recovers it).
  await heartbeat.first;
  let outcome: DoorbellOutcome;
  try {
    outcome = await options.handle(doorbell, record);
  } catch (err) {
    report(err, "handle");
    await heartbeat.stop();
    const receiveCount = Number(record.attributes?.ApproximateReceiveCount ?? 1);
    await setVisibility((options.failureDelayMs ?? failureBackoffMs)(receiveCount));
    return false;
  }
  await heartbeat.stop();
  if (outcome.kind === "ack") return true;
  await setVisibility(outcome.delayMs);
  return false;
}
