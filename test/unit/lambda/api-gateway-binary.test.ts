/**
 * A binary body through the API Gateway front door (issue 35, point 9): the construct makes every
 * media type binary on the REST API (`binaryMediaTypes: ["*\/*"]`, harness.test.ts), so API
 * Gateway hands the http function each body base64-encoded in a REST (payload 1.0) proxy event
 * with `isBase64Encoded: true`. Here such events go through the http function's own adapter (the
 * Hono app under `streamHandle`, streamed as the Lambda runtime streams) over a memory runtime:
 * an attachment's bytes arrive as sent, JSON routes still work, and the event API Gateway sent
 * without binary media types (the body as UTF-8 text) shows what it did to the bytes.
 */
import { Writable } from "node:stream";
import { streamHandle } from "hono/aws-lambda";
import { afterAll, describe, expect, it } from "vitest";
import { installAwsLambdaGlobal } from "../../../dev/local-cloud/awslambda-local.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createApp } from "../../../src/http/app.ts";
import { LAMBDA_MAX_UPLOAD_BYTES } from "../../../src/lambda/settings.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { digestOf, pngOfSize } from "../../support/attachment-fixtures.ts";

installAwsLambdaGlobal();
const runtime = createRuntime({
  agents: { assistant: { initialize: () => localModel() } },
  store: createMemoryStore(),
  onObserverError: () => {},
});
afterAll(() => runtime.close());
const handler = streamHandle(createApp(runtime, { maxUploadBytes: LAMBDA_MAX_UPLOAD_BYTES })) as unknown as (
  event: unknown,
  stream: Writable,
  context: unknown,
) => Promise<void>;

/** A REST API proxy event (payload 1.0) as API Gateway sends it to the `{proxy+}` method. */
function restEvent(method: string, path: string, contentType: string, body: string, isBase64Encoded: boolean) {
  const headers = { "content-type": contentType, host: "abc123.execute-api.eu-west-1.amazonaws.com" };
  return {
    resource: "/{proxy+}",
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { proxy: path.slice(1) },
    stageVariables: null,
    requestContext: {
      resourcePath: "/{proxy+}",
      httpMethod: method,
      path: `/v1${path}`,
      stage: "v1",
      domainName: headers.host,
      requestId: "test-request",
      identity: { sourceIp: "192.0.2.1" },
    },
    body,
    isBase64Encoded,
  };
}

/** What a streaming handler wrote: the prelude (status, headers), 8 NUL bytes, the body. */
class CollectedStream extends Writable {
  _onBeforeFirstWrite?: (write: (chunk: unknown) => void) => void;
  readonly chunks: Buffer[] = [];
  #first = true;
  setContentType(_contentType: string): void {}
  override write(chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
    if (this.#first) {
      this.#first = false;
      this._onBeforeFirstWrite?.((c) => super.write(c as Uint8Array));
    }
    return super.write(chunk as Uint8Array, encoding as BufferEncoding, cb as () => void);
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: () => void): void {
    this.chunks.push(Buffer.from(chunk));
    cb();
  }
  response(): { status: number; body: unknown } {
    const all = Buffer.concat(this.chunks);
    const at = all.indexOf(Buffer.alloc(8));
    const prelude = JSON.parse(all.subarray(0, at).toString("utf8")) as { statusCode: number };
    return { status: prelude.statusCode, body: JSON.parse(all.subarray(at + 8).toString("utf8")) };
  }
}

async function invoke(event: unknown): Promise<{ status: number; body: unknown }> {
  const stream = new CollectedStream();
  const ended = new Promise((resolve) => stream.on("finish", resolve));
  await handler(event, stream, {});
  await ended;
  return stream.response();
}

describe("the http function behind API Gateway: binary bodies", () => {
  const png = pngOfSize(64 * 1024, 3);

  it("stores an attachment's bytes as sent when API Gateway passes the body base64-encoded (binary media types)", async () => {
    const res = await invoke(restEvent("POST", "/attachments", "image/png", png.toString("base64"), true));
    expect(res).toEqual({ status: 201, body: { digest: digestOf(png), mediaType: "image/png", size: png.byteLength } });
  });

  it("still admits JSON, which API Gateway then base64-encodes too", async () => {
    const dispatch = JSON.stringify({ kind: "user", body: "hi", dispatchId: "binary-json-1" });
    const res = await invoke(restEvent("POST", "/agents/assistant/binary", "application/json", Buffer.from(dispatch).toString("base64"), true));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ submissionId: "binary-json-1" });
  });

  it("without binary media types the body arrives as UTF-8 text: the bytes are mangled (what the construct's setting prevents)", async () => {
    const asText = png.toString("utf8"); // invalid sequences become U+FFFD, as API Gateway's text passthrough does
    const res = await invoke(restEvent("POST", "/attachments", "image/png", asText, false));
    // Refused as not a PNG, or stored under another digest: either way not the bytes sent.
    expect(JSON.stringify(res.body)).not.toContain(digestOf(png));
  });
});
