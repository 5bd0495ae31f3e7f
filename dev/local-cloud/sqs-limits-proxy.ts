/**
 * A checking proxy in front of fauxqs for the functions of the local cloud: it refuses, with the
 * error SQS answers and the SDK throws, the requests SQS would refuse and fauxqs lets through, and
 * passes every other request on untouched. fauxqs already refuses batches of more than 10 entries
 * and visibility timeouts outside 0–43,200 s; it takes any message group or deduplication id and
 * messages up to 1 MiB. This proxy holds:
 *
 * - a message (body and attributes) at most `maxMessageBytes`: 262,144 by default. SQS raised
 *   its ceiling to 1 MiB in 2025 (`MaximumMessageSize` now up to 1,048,576), but the construct
 *   does not set that attribute, so a queue's limit depends on the account's default; 256 KiB
 *   passes everywhere. SendMessageBatch's entries together at most the same;
 * - at most 10 entries in a batch (SendMessageBatch, DeleteMessageBatch,
 *   ChangeMessageVisibilityBatch);
 * - `MessageGroupId` and `MessageDeduplicationId`: 1–128 characters, alphanumerics and
 *   punctuation.
 *
 * The SDK's SQS client speaks the JSON protocol (`X-Amz-Target: AmazonSQS.<Action>`); the query
 * protocol's error code goes in `x-amzn-query-error`, which the SDK reads as the error's name.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** SQS's message limit the proxy holds by default (see the file comment). */
export const SQS_DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024;
/** Entries in one batch request. */
export const SQS_MAX_BATCH_ENTRIES = 10;
/** Length of a message group or deduplication id. */
export const SQS_MAX_ID_LENGTH = 128;
const ID_CHARS = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+$/;

export interface SqsLimitsProxy {
  readonly url: string;
  /** Requests refused so far, by error code. */
  readonly refused: Record<string, number>;
  close(): Promise<void>;
}

/** An SQS refusal: the JSON protocol's error type and the query protocol's code. */
export interface SqsRefusal {
  /** The query code (`x-amzn-query-error`), what the SDK names the error. */
  code: string;
  message: string;
}

interface MessageAttribute {
  DataType?: string;
  StringValue?: string;
  BinaryValue?: string;
}

interface SendEntry {
  Id?: string;
  MessageBody?: string;
  MessageAttributes?: Record<string, MessageAttribute>;
  MessageGroupId?: string;
  MessageDeduplicationId?: string;
}

/** A message's size as SQS counts it: the body and each attribute's name, type and value. */
export function sqsMessageBytes(entry: Pick<SendEntry, "MessageBody" | "MessageAttributes">): number {
  let bytes = Buffer.byteLength(entry.MessageBody ?? "", "utf8");
  for (const [name, attribute] of Object.entries(entry.MessageAttributes ?? {})) {
    bytes += Buffer.byteLength(name, "utf8") + Buffer.byteLength(attribute.DataType ?? "", "utf8");
    if (attribute.StringValue !== undefined) bytes += Buffer.byteLength(attribute.StringValue, "utf8");
    // Binary values travel base64-encoded; SQS counts their bytes.
    if (attribute.BinaryValue !== undefined) bytes += Buffer.from(attribute.BinaryValue, "base64").length;
  }
  return bytes;
}

function idProblem(name: "MessageGroupId" | "MessageDeduplicationId", value: string | undefined): SqsRefusal | undefined {
  if (value === undefined) return undefined;
  if (value.length >= 1 && value.length <= SQS_MAX_ID_LENGTH && ID_CHARS.test(value)) return undefined;
  return {
    code: "InvalidParameterValue",
    message: `Value ${value} for parameter ${name} is invalid. Reason: ${name} can only include alphanumeric and punctuation characters. 1 to ${SQS_MAX_ID_LENGTH} in length.`,
  };
}

function entryProblem(entry: SendEntry, maxMessageBytes: number): SqsRefusal | undefined {
  if (sqsMessageBytes(entry) > maxMessageBytes) {
    return { code: "InvalidParameterValue", message: `One or more parameters are invalid. Reason: Message must be shorter than ${maxMessageBytes} bytes.` };
  }
  return idProblem("MessageGroupId", entry.MessageGroupId) ?? idProblem("MessageDeduplicationId", entry.MessageDeduplicationId);
}

/** What SQS would refuse in this request (`action` without the `AmazonSQS.` prefix), if anything. */
export function sqsRequestProblem(action: string, body: Record<string, unknown>, maxMessageBytes = SQS_DEFAULT_MAX_MESSAGE_BYTES): SqsRefusal | undefined {
  if (action === "SendMessage") return entryProblem(body as SendEntry, maxMessageBytes);
  if (action === "SendMessageBatch" || action === "DeleteMessageBatch" || action === "ChangeMessageVisibilityBatch") {
    const entries = Array.isArray(body.Entries) ? (body.Entries as SendEntry[]) : [];
    if (entries.length > SQS_MAX_BATCH_ENTRIES) {
      return {
        code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        message: `Maximum number of entries per request are ${SQS_MAX_BATCH_ENTRIES}. You have sent ${entries.length}.`,
      };
    }
    if (action !== "SendMessageBatch") return undefined;
    const total = entries.reduce((n, e) => n + sqsMessageBytes(e), 0);
    if (total > maxMessageBytes) {
      return { code: "AWS.SimpleQueueService.BatchRequestTooLong", message: `Batch requests cannot be longer than ${maxMessageBytes} bytes. You have sent ${total} bytes.` };
    }
    for (const entry of entries) {
      const problem = idProblem("MessageGroupId", entry.MessageGroupId) ?? idProblem("MessageDeduplicationId", entry.MessageDeduplicationId);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** Starts the proxy in front of `target` (fauxqs's address). */
export async function startSqsLimitsProxy(target: string, options: { maxMessageBytes?: number } = {}): Promise<SqsLimitsProxy> {
  const upstream = new URL(target);
  const refused: Record<string, number> = {};
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(parts);
      const target = String(req.headers["x-amz-target"] ?? "");
      if (target.startsWith("AmazonSQS.")) {
        let body: Record<string, unknown> | undefined;
        try {
          body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
        } catch {
          // not ours to judge: fauxqs answers a malformed body
        }
        const problem = body && sqsRequestProblem(target.slice("AmazonSQS.".length), body, options.maxMessageBytes);
        if (problem) {
          refused[problem.code] = (refused[problem.code] ?? 0) + 1;
          const shortCode = problem.code.replace(/^AWS\.SimpleQueueService\./, "");
          res.writeHead(400, {
            "content-type": "application/x-amz-json-1.0",
            "x-amzn-query-error": `${problem.code};Sender`,
            "x-amzn-requestid": `limits-${Date.now()}`,
          });
          res.end(JSON.stringify({ __type: `com.amazonaws.sqs#${shortCode}`, message: problem.message }));
          return;
        }
      }
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      forward.on("error", () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      forward.end(raw);
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  // A local cloud that fails to start must not keep its test process alive through this.
  server.unref();
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refused,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
