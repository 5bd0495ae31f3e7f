/**
 * Lambda's limits on the local cloud (`dev/local-cloud/lambda-limits.ts`, `function-url-limits.ts`):
 * what the real service refuses, the local function host refuses too, in Lambda's words, and the
 * harness stays correct at each limit: a clear answer, nothing lost.
 */
import { fileURLToPath } from "node:url";
import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { LocalFunction } from "../../../dev/local-cloud/function-host.ts";
import {
  LAMBDA_ENVIRONMENT_MAX_BYTES,
  LAMBDA_SYNC_PAYLOAD_MAX_BYTES,
  LAMBDA_SYNC_RESPONSE_MAX_BYTES,
  measuredEnvironment,
} from "../../../dev/local-cloud/lambda-limits.ts";
import { LAMBDA_MAX_UPLOAD_BYTES } from "../../../src/lambda/settings.ts";
import { digestOf, pngOfSize } from "../../support/attachment-fixtures.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { inStatus, requestJson, uid } from "../../support/local-cloud-http.ts";
import { SQS_DEFAULT_MAX_MESSAGE_BYTES } from "../../../dev/local-cloud/sqs-limits-proxy.ts";
import { followSse } from "../../support/sse-follower.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const oversizedResult = fileURLToPath(new URL("../../support/local-cloud-fixtures/oversized-result-handler.ts", import.meta.url));
/** Small enough to reach with a few messages, larger than any one event of the test. */
const STREAM_MAX_BYTES = 32 * 1024;
const STREAM_MAX_MS = 2_000;
/** The least the construct allows: the stream limit + 10 s. */
const HTTP_TIMEOUT_MS = STREAM_MAX_MS + 10_000;

const suite = useLocalCloud({
  agentsModule,
  workers: 1,
  workerTimeoutMs: 40_000,
  streamMaxMs: STREAM_MAX_MS,
  httpTimeoutMs: HTTP_TIMEOUT_MS,
  streamedResponseMaxBytes: STREAM_MAX_BYTES,
  sweeperRateMs: false,
});

describe("local cloud: Lambda's limits", () => {
  it("refuses to start a function whose environment is over 4 KB as Lambda measures it; one at exactly 4 KB starts", async () => {
    const env = suite.cloud.functionEnv("dlq");
    // `,"PAD":""` adds 9 bytes to the measured JSON, then one per character.
    const pad = LAMBDA_ENVIRONMENT_MAX_BYTES - Buffer.byteLength(measuredEnvironment(env)) - 9;
    expect(pad).toBeGreaterThan(0);
    const fits = await suite.cloud.extraFunction("dlq", { PAD: "x".repeat(pad) });
    expect(Buffer.byteLength(measuredEnvironment({ ...env, PAD: "x".repeat(pad) }))).toBe(LAMBDA_ENVIRONMENT_MAX_BYTES);
    expect(fits.pid).toBeDefined();
    await expect(suite.cloud.extraFunction("dlq", { PAD: "x".repeat(pad + 1) })).rejects.toMatchObject({
      code: "InvalidParameterValueException",
      message: expect.stringMatching(/exceeded the 4KB limit/),
    });
  });

  it("an invocation's event over 6 MB is refused before any container runs; a result over 6 MB is Lambda's function error", async () => {
    const fn = new LocalFunction({ name: "limits-probe", handlerModule: oversizedResult, agentsModule, timeoutMs: 30_000, env: {} });
    try {
      await expect(fn.invoke({ bytes: 1, pad: "x".repeat(LAMBDA_SYNC_PAYLOAD_MAX_BYTES) })).rejects.toMatchObject({
        code: "RequestEntityTooLargeException",
        message: `Request must be smaller than ${LAMBDA_SYNC_PAYLOAD_MAX_BYTES} bytes for the InvokeFunction operation`,
      });
      expect(fn.coldStarts, "refused before a container started").toBe(0);
      // A JSON string result carries its two quotes.
      expect(await fn.invoke({ bytes: LAMBDA_SYNC_RESPONSE_MAX_BYTES - 2 })).toHaveLength(LAMBDA_SYNC_RESPONSE_MAX_BYTES - 2);
      await expect(fn.invoke({ bytes: LAMBDA_SYNC_RESPONSE_MAX_BYTES - 1 })).rejects.toMatchObject({
        code: "Function.ResponseSizeTooLarge",
        message: expect.stringMatching(/Response payload size exceeded maximum allowed payload size \(6291556 bytes\)/),
      });
    } finally {
      await fn.close();
    }
  });

  it("the function URL answers 413 to a request over 6 MB; the largest inline upload the harness takes fits", { timeout: 60_000 }, async () => {
    suite.dumpLogsOnFailure();
    // 4 MiB of image, base64 in the event: about 5.6 MB, inside the 6 MB.
    const largest = pngOfSize(LAMBDA_MAX_UPLOAD_BYTES);
    const stored = await fetch(`${suite.cloud.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: largest });
    expect(stored.status).toBe(201);
    expect(await suite.store.getAttachmentRef(digestOf(largest))).toMatchObject({ size: largest.length });

    const over = pngOfSize(4_800_000, 2);
    const refused = await fetch(`${suite.cloud.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: over });
    expect(refused.status).toBe(413);
    expect(refused.headers.get("x-amzn-errortype")).toBe("RequestEntityTooLargeException");
    expect(await refused.json()).toEqual({ Message: `Request must be smaller than ${LAMBDA_SYNC_PAYLOAD_MAX_BYTES} bytes for the InvokeFunction operation` });
    await expect(suite.store.getAttachmentRef(digestOf(over)), "nothing stored").rejects.toThrow();
  });

  it("a stream cut at its response maximum is resumed with Last-Event-ID: the client misses nothing", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    const instance = `big-${uid()}`;
    // recall answers with every user message so far: the conversation grows past the maximum.
    let last: { submissionId: string; conversationId: string } | undefined;
    for (let i = 0; i < 7; i++) {
      const { status, json } = await requestJson(`${suite.cloud.url}/agents/recall/${instance}`, "POST", { kind: "user", body: `m${i} ${"y".repeat(1_500)}` });
      expect(status).toBe(202);
      await inStatus(suite.store, json.submissionId, "settled");
      last = json;
    }
    const records = await suite.store.readRecords(last!.conversationId);
    const bytes = records.reduce((n, r) => n + JSON.stringify(r).length, 0);
    expect(bytes, "the conversation is larger than one stream may send").toBeGreaterThan(2 * STREAM_MAX_BYTES);

    const cutsBefore = suite.logs.filter((l) => l.includes("response stream over")).length;
    const follower = followSse(`${suite.cloud.url}/agents/recall/${instance}`);
    const events = await follower.finish();
    expect(suite.logs.filter((l) => l.includes("response stream over")).length, "the stream was cut at its maximum").toBeGreaterThan(cutsBefore);
    expect(follower.connections).toBeGreaterThan(1);
    const seen = [...new Set(events.map((e) => e.id))];
    expect(seen, "every record once, in order").toEqual(records.map((r) => r.id));
  });

  it("the functions reach SQS through the limits proxy: a message over 256 KiB from their endpoint is refused", async () => {
    const endpoint = suite.cloud.functionEnv("worker").AWS_ENDPOINT_URL_SQS;
    expect(endpoint).not.toBe(process.env.AWS_ENDPOINT_URL_SQS);
    const sqs = new SQSClient({ endpoint, maxAttempts: 1 });
    try {
      const send = new SendMessageCommand({
        QueueUrl: suite.cloud.deadLetterQueueUrl,
        MessageBody: "x".repeat(SQS_DEFAULT_MAX_MESSAGE_BYTES + 1),
        MessageGroupId: "g",
        MessageDeduplicationId: uid(),
      });
      await expect(sqs.send(send)).rejects.toMatchObject({ name: "InvalidParameterValue" });
    } finally {
      sqs.destroy();
    }
  });

  it("`?wait=true` answers 202 before the function URL's timeout when the turn outlasts it, and the turn settles", { timeout: 120_000 }, async () => {
    suite.dumpLogsOnFailure();
    const instance = `slow-${uid()}`;
    // The step alone takes longer than the http function may run.
    const { status, json } = await requestJson(`${suite.cloud.url}/agents/stepper/${instance}?wait=true`, "POST", {
      kind: "user",
      body: `steps=1 sleep=${HTTP_TIMEOUT_MS + 2_000}`,
    });
    expect(status, "the ids, not a request cut at the function timeout").toBe(202);
    expect(json).toMatchObject({ submissionId: expect.any(String), conversationId: expect.any(String) });
    await inStatus(suite.store, json.submissionId, "settled", 60_000);
    const texts = (await suite.store.readRecords(json.conversationId)).filter((r) => r.kind === "assistant_message_completed");
    expect(JSON.stringify(texts.at(-1))).toContain("done after 1 steps");
  });
});
