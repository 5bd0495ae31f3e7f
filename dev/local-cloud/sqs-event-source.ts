/**
 * A local SQS event source mapping: long-polls a queue and invokes a function with real SQS
 * event records (message id, receipt handle, ApproximateReceiveCount and the other system
 * attributes), then deletes what succeeded and leaves the rest to come back after their
 * visibility timeout — honouring `batchItemFailures` as `ReportBatchItemFailures` does. A
 * function error, timeout or crash fails the whole batch. One poller per function container;
 * Lambda's own scaling (by active message groups) is not modelled.
 */
import {
  DeleteMessageCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from "aws-lambda";
import type { LocalFunction } from "./function-host.ts";

export interface SqsEventSourceOptions {
  client: SQSClient;
  queueUrl: string;
  queueArn: string;
  /** One poller per function (container). */
  functions: LocalFunction[];
  /** Default 1 (the harness's worker and dlq use batch size 1). */
  batchSize?: number;
  /**
   * The mapping's `ReportBatchItemFailures` (default true): without it Lambda ignores a returned
   * `batchItemFailures` and deletes the whole batch once the invocation succeeds.
   */
  reportBatchItemFailures?: boolean;
  /** Long-poll wait per receive, seconds. Default 1 (Lambda uses 20; shorter stops faster). */
  waitSeconds?: number;
  /** An invocation failed or a queue call failed (the poller goes on). */
  onError?: (err: unknown, fn: LocalFunction) => void;
  /** Called with each event just before `fn` is invoked with it. */
  onDeliver?: (event: SQSEvent, fn: LocalFunction) => void;
}

/** Builds the event Lambda hands a function for messages received from `queueArn`. */
export function toSqsEvent(messages: Message[], queueArn: string, region: string): SQSEvent {
  return { Records: messages.map((m) => toSqsRecord(m, queueArn, region)) };
}

function toSqsRecord(m: Message, queueArn: string, region: string): SQSRecord {
  const a = m.Attributes ?? {};
  const attributes: Record<string, string> = {};
  for (const name of [
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
  ]) {
    const v = a[name as keyof typeof a];
    if (v !== undefined) attributes[name] = v;
  }
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? "",
    attributes: attributes as unknown as SQSRecord["attributes"],
    messageAttributes: toMessageAttributes(m.MessageAttributes),
    md5OfBody: m.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

function toMessageAttributes(attrs: Record<string, MessageAttributeValue> | undefined): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, v] of Object.entries(attrs ?? {})) {
    out[name] = {
      dataType: v.DataType ?? "String",
      ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
      ...(v.BinaryValue !== undefined ? { binaryValue: Buffer.from(v.BinaryValue).toString("base64") } : {}),
      stringListValues: v.StringListValues ?? [],
      binaryListValues: (v.BinaryListValues ?? []).map((b) => Buffer.from(b).toString("base64")),
    };
  }
  return out;
}

/** The message ids to delete after an invocation (none when the response is not valid). */
export function successfulIds(messages: Message[], response: unknown): Set<string> {
  const ids = new Set(messages.map((m) => m.MessageId!));
  const failures = (response as Partial<SQSBatchResponse> | null)?.batchItemFailures;
  if (failures === undefined || failures === null) return ids;
  if (!Array.isArray(failures)) return new Set();
  for (const f of failures) {
    // A malformed or unknown identifier fails the whole batch, as on Lambda.
    if (typeof f?.itemIdentifier !== "string" || !ids.has(f.itemIdentifier)) return new Set();
    ids.delete(f.itemIdentifier);
  }
  return ids;
}

export class SqsEventSource {
  readonly #options: SqsEventSourceOptions;
  readonly #stop = new AbortController();
  #loops: Promise<void>[] = [];
  readonly #region: string;

  constructor(options: SqsEventSourceOptions) {
    this.#options = options;
    this.#region = options.queueArn.split(":")[3] ?? "us-east-1";
  }

  start(): void {
    this.#loops = this.#options.functions.map((fn) => this.#poll(fn));
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.allSettled(this.#loops);
  }

  async #poll(fn: LocalFunction): Promise<void> {
    const { client, queueUrl } = this.#options;
    const signal = this.#stop.signal;
    const report = (err: unknown) => this.#options.onError?.(err, fn);
    while (!signal.aborted) {
      let messages: Message[];
      try {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: this.#options.batchSize ?? 1,
            WaitTimeSeconds: this.#options.waitSeconds ?? 1,
            MessageSystemAttributeNames: ["All"],
            MessageAttributeNames: ["All"],
          }),
          { abortSignal: signal },
        );
        messages = out.Messages ?? [];
      } catch (err) {
        if (signal.aborted) return;
        report(err);
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (messages.length === 0) continue;
      let response: unknown;
      const event = toSqsEvent(messages, this.#options.queueArn, this.#region);
      this.#options.onDeliver?.(event, fn);
      try {
        response = await fn.invoke(event);
      } catch (err) {
        report(err);
        continue; // the whole batch comes back after its visibility timeout
      }
      const ok = this.#options.reportBatchItemFailures === false ? successfulIds(messages, undefined) : successfulIds(messages, response);
      for (const m of messages) {
        if (!ok.has(m.MessageId!)) continue;
        try {
          await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
        } catch (err) {
          report(err);
        }
      }
    }
  }
}
