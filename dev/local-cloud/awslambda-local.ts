/**
 * A local stand-in for what the AWS Lambda Node.js runtime gives a handler: the `awslambda`
 * global (`streamifyResponse`, `HttpResponseStream`), a `Context`, and a Function URL front end
 * (payload format 2.0) that serves a RESPONSE_STREAM handler with real chunked streaming.
 *
 * The stream protocol mirrors the runtime interface client: `HttpResponseStream.from()` sets the
 * content type `application/vnd.awslambda.http-integration-response` and arranges for the JSON
 * prelude (status, headers, cookies) plus 8 NUL bytes to be written before the first body write;
 * the front end parses the prelude back into the HTTP response head.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import type { Context, LambdaFunctionURLEvent } from "aws-lambda";
import { guardResponse, refuseOversizedEvent } from "./function-url-limits.ts";

/** The marker the runtime reads to invoke a handler in streaming mode. */
export const HANDLER_STREAMING = Symbol.for("aws.lambda.runtime.handler.streaming");
const STREAM_RESPONSE = "response";
const PRELUDE_CONTENT_TYPE = "application/vnd.awslambda.http-integration-response";
const PRELUDE_DELIMITER = Buffer.alloc(8);

interface Prelude {
  statusCode?: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

/** The writable a streaming handler receives (what `HttpResponseStream.from` decorates). */
interface PreludeWritable extends Writable {
  setContentType(contentType: string): void;
  _onBeforeFirstWrite?: (write: (chunk: unknown) => void) => void;
}

const localHttpResponseStream = {
  from(underlying: PreludeWritable, prelude: Record<string, unknown>): PreludeWritable {
    underlying.setContentType(PRELUDE_CONTENT_TYPE);
    const metadata = JSON.stringify(prelude);
    underlying._onBeforeFirstWrite = (write) => {
      write(metadata);
      write(new Uint8Array(8));
    };
    return underlying;
  },
};

function localStreamifyResponse<T extends (...args: never[]) => unknown>(handler: T): T {
  (handler as unknown as Record<symbol, string>)[HANDLER_STREAMING] = STREAM_RESPONSE;
  return handler;
}

/**
 * Installs `globalThis.awslambda` unless a real runtime provided it. Call it before the handler
 * module is evaluated: `streamHandle`/`streamifyResponse` read the global at import time.
 */
export function installAwsLambdaGlobal(): void {
  const g = globalThis as { awslambda?: { streamifyResponse?: unknown } };
  if (g.awslambda?.streamifyResponse) return;
  (g as Record<string, unknown>).awslambda = {
    streamifyResponse: localStreamifyResponse,
    HttpResponseStream: localHttpResponseStream,
  };
}

/** True when `handler` was wrapped by `awslambda.streamifyResponse`. */
export function isStreamingHandler(handler: unknown): boolean {
  return (handler as Record<symbol, unknown> | undefined)?.[HANDLER_STREAMING] === STREAM_RESPONSE;
}

/** The responseStream handed to a streaming handler; forwards the body to an HTTP response. */
export class LocalResponseStream extends Writable implements PreludeWritable {
  _onBeforeFirstWrite?: (write: (chunk: unknown) => void) => void;
  readonly #res: http.ServerResponse;
  #contentType = "application/octet-stream";
  #firstWriteDone = false;
  #headSent = false;
  #pending: Buffer = Buffer.alloc(0);

  constructor(res: http.ServerResponse) {
    super();
    this.#res = res;
  }

  setContentType(contentType: string): void {
    if (this.#firstWriteDone) throw new Error("Cannot set content-type, too late.");
    this.#contentType = contentType;
  }

  // The runtime emits the prelude on the first write() call only, as here.
  override write(chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
    let data = chunk;
    if (typeof data !== "string" && !(data instanceof Uint8Array)) data = JSON.stringify(data);
    if (!this.#firstWriteDone) {
      this.#firstWriteDone = true;
      this._onBeforeFirstWrite?.((c) => super.write(c as Uint8Array));
    }
    return super.write(data, encoding as BufferEncoding, cb as (err?: Error | null) => void);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.#headSent) {
      this.#res.write(chunk, () => cb());
      return;
    }
    if (this.#contentType !== PRELUDE_CONTENT_TYPE) {
      this.#res.writeHead(200, { "content-type": this.#contentType });
      this.#headSent = true;
      this.#res.write(chunk, () => cb());
      return;
    }
    this.#pending = Buffer.concat([this.#pending, chunk]);
    const at = this.#pending.indexOf(PRELUDE_DELIMITER);
    if (at === -1) return cb();
    const prelude = JSON.parse(this.#pending.subarray(0, at).toString("utf8")) as Prelude;
    const headers: http.OutgoingHttpHeaders = { ...(prelude.headers ?? {}) };
    if (prelude.cookies?.length) headers["set-cookie"] = prelude.cookies;
    this.#res.writeHead(prelude.statusCode ?? 200, headers);
    this.#headSent = true;
    const rest = this.#pending.subarray(at + PRELUDE_DELIMITER.length);
    this.#pending = Buffer.alloc(0);
    if (rest.length > 0) this.#res.write(rest, () => cb());
    else cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.#headSent) {
      const type = this.#contentType === PRELUDE_CONTENT_TYPE ? "application/octet-stream" : this.#contentType;
      this.#res.writeHead(200, { "content-type": type });
      this.#headSent = true;
    }
    this.#res.end(() => cb());
  }
}

/** A Lambda `Context` whose remaining time counts down to `deadline` (epoch ms). */
export function lambdaContext(functionName: string, deadline: number, memoryMb = 1024): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION ?? "us-east-1"}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

const TEXT_CONTENT = /^(text\/|application\/(json|xml|x-www-form-urlencoded|javascript))/;

/** Builds the Function URL event (payload 2.0) of a request, reading its body. */
export async function functionUrlEvent(req: http.IncomingMessage): Promise<LambdaFunctionURLEvent> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const raw = Buffer.concat(parts);
  const url = new URL(req.url ?? "/", "http://localhost");
  // The path as the client sent it: a URL parser would resolve `.` and `..` segments, which the
  // app must see to refuse them (issue 33; a function URL's own handling of them is unverified).
  const rawPath = (req.url ?? "/").split("?")[0]!;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined && k !== "cookie") headers[k] = Array.isArray(v) ? v.join(",") : v;
  }
  const isText = TEXT_CONTENT.test(req.headers["content-type"] ?? "");
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = query[k] !== undefined ? `${query[k]},${v}` : v;
  const now = new Date();
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString: url.search.slice(1),
    cookies: req.headers.cookie ? req.headers.cookie.split(";").map((s) => s.trim()) : undefined,
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    requestContext: {
      accountId: "anonymous",
      apiId: "local",
      domainName: req.headers.host ?? "localhost",
      domainPrefix: "local",
      http: {
        method: req.method ?? "GET",
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? "127.0.0.1",
        userAgent: req.headers["user-agent"] ?? "",
      },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: raw.length ? (isText ? raw.toString("utf8") : raw.toString("base64")) : undefined,
    isBase64Encoded: raw.length > 0 && !isText,
  } as LambdaFunctionURLEvent;
}

export interface FunctionUrlOptions {
  port?: number;
  host?: string;
  functionName?: string;
  /** Function timeout: the context's remaining time counts down from it. Default 15 min. */
  timeoutMs?: number;
  /** The context's `memoryLimitInMB`. Default 1024. */
  memoryMb?: number;
  /** Largest RESPONSE_STREAM response before it is cut; default Lambda's 200 MB (`function-url-limits.ts`). */
  streamedResponseMaxBytes?: number;
}

/** A listening local function URL. */
export interface FunctionUrlServer {
  url: string;
  close(): Promise<void>;
}

type AnyHandler = (...args: unknown[]) => unknown;

/**
 * Serves `handler` like a Function URL: RESPONSE_STREAM for a streamified handler, BUFFERED
 * otherwise. A handler that throws before its response head is sent answers 502; one that throws
 * mid-stream cuts the connection (the client sees a truncated response), as on Lambda.
 */
export function serveFunctionUrl(handler: AnyHandler, options: FunctionUrlOptions = {}): Promise<FunctionUrlServer> {
  const functionName = options.functionName ?? "http";
  const timeoutMs = options.timeoutMs ?? 15 * 60_000;
  const server = http.createServer(async (req, res) => {
    try {
      const event = await functionUrlEvent(req);
      // Lambda's limits on the invocation (`function-url-limits.ts`): payload, timeout, stream size.
      if (refuseOversizedEvent(event, res)) return;
      guardResponse(res, { timeoutMs, streamedResponseMaxBytes: options.streamedResponseMaxBytes, log: (line) => console.error(`[${functionName}] ${line}`) });
      const context = lambdaContext(functionName, Date.now() + timeoutMs, options.memoryMb);
      if (isStreamingHandler(handler)) {
        const stream = new LocalResponseStream(res);
        await handler(event, stream, context);
        if (!stream.writableEnded) stream.end();
        return;
      }
      const result = (await handler(event, context)) as
        | { statusCode: number; headers?: Record<string, string>; cookies?: string[]; body?: string; isBase64Encoded?: boolean }
        | undefined;
      if (result && typeof result === "object" && "statusCode" in result) {
        const headers: http.OutgoingHttpHeaders = { ...(result.headers ?? {}) };
        if (result.cookies?.length) headers["set-cookie"] = result.cookies;
        res.writeHead(result.statusCode, headers);
        res.end(result.body === undefined ? undefined : Buffer.from(result.body, result.isBase64Encoded ? "base64" : "utf8"));
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(result === undefined ? undefined : JSON.stringify(result));
      }
    } catch (err) {
      console.error("[function-url] handler error", err);
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "application/json" });
        res.end('{"Message":"Internal Server Error"}');
      } else {
        res.destroy(err as Error);
      }
    }
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      const { port, address } = server.address() as AddressInfo;
      resolve({
        url: `http://${address.includes(":") ? `[${address}]` : address}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
