/**
 * Draining the dead-letter queue on a schedule instead of through a second SQS event source: an
 * event source long-polls an empty queue all month (about 650,000 billed receives), while one
 * short receive per sweep tick is about 43,000. A dead letter waits at most a tick or two (a
 * short poll samples a subset of SQS's servers and may miss a message once).
 */
import {
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { Doorbell } from "../ports/queue.ts";
import { decodeDoorbell } from "./doorbell-body.ts";

export interface DeadLetterDrainOptions {
  client: SQSClient;
  queueUrl: string;
  /** How long a received message stays hidden while it is handled (then it is seen again). */
  visibilityTimeoutMs: number;
  /** Decides about one dead letter; a throw leaves the message to come back after the timeout. */
  handle(doorbell: Doorbell): Promise<void>;
  /** A message that is not a doorbell (deleted: it never will be one), or a handler that threw. */
  onError(err: unknown, message: Message, phase: "decode" | "handle"): void;
  /** Checked before each receive: true stops the drain (the invocation is running out of time). */
  shouldStop(): boolean;
}

/** What one drain did. */
export interface DeadLetterDrainReport {
  received: number;
  handled: number;
  failed: number;
}

/** Receives and handles dead letters until a receive comes back empty (or `shouldStop`). */
export async function drainDeadLetters(o: DeadLetterDrainOptions): Promise<DeadLetterDrainReport> {
  const report: DeadLetterDrainReport = { received: 0, handled: 0, failed: 0 };
  while (!o.shouldStop()) {
    const res = await o.client.send(
      new ReceiveMessageCommand({
        QueueUrl: o.queueUrl,
        MaxNumberOfMessages: 10,
        // Short poll: an empty queue answers at once, so an idle tick bills milliseconds.
        WaitTimeSeconds: 0,
        VisibilityTimeout: Math.max(1, Math.ceil(o.visibilityTimeoutMs / 1000)),
      }),
    );
    const messages = res.Messages ?? [];
    if (messages.length === 0) break;
    report.received += messages.length;
    // In order: a FIFO receive returns a group's messages in order.
    for (const message of messages) {
      let doorbell: Doorbell;
      try {
        doorbell = decodeDoorbell(message.Body ?? "");
      } catch (err) {
        o.onError(err, message, "decode");
        report.failed += 1;
        await deleteMessage(o, message);
        continue;
      }
      try {
        await o.handle(doorbell);
      } catch (err) {
        o.onError(err, message, "handle");
        report.failed += 1;
        continue;
      }
      await deleteMessage(o, message);
      report.handled += 1;
    }
  }
  return report;
}

function deleteMessage(o: DeadLetterDrainOptions, message: Message): Promise<unknown> {
  return o.client.send(new DeleteMessageCommand({ QueueUrl: o.queueUrl, ReceiptHandle: message.ReceiptHandle! }));
}
