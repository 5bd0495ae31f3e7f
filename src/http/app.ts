import { Hono, type Context, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import { STREAM_MAX_MS, STREAM_POLL } from "../runtime/defaults.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { errorResponse, toErrorResponse } from "./http-errors.ts";
import { firstPage, tailRecords } from "./record-stream.ts";
import { corsMiddleware, originGuard, type CorsOptions } from "./origin-guard.ts";
import { parseCancelBody, parseCompactBody, parseDispatchBody, parseInjectBody, parseJsonObject, readJsonObject } from "./request-body.ts";
import { mountSubmissionRoutes } from "./submission-routes.ts";
import { mountApprovalRoutes, mountCallbackRoute } from "./wait-routes.ts";
import { mountAttachmentRoutes } from "./attachment-routes.ts";
import { mountConversationRoutes } from "./conversation-routes.ts";
import { mountConsoleRoutes } from "./console-routes.ts";
import { callerMiddleware, type AppEnv, type AuthOptions } from "./caller.ts";
import { jsonRpcError, MCP_PATH, mountMcpRoute, mountResourceMetadata, resourceMetadataChallenge } from "./mcp-route.ts";
import type { SubmissionRetryView } from "../protocol/submission-view.ts";

/** Tuning of the HTTP app. Every field is optional; the defaults suit the embedded server. */
export interface AppOptions {
  /** Largest request body in bytes, on every route but an import and `POST /attachments` (their own limits below); larger → 413. Default 1 MiB (message bodies are capped at 256 KiB by admission). */
  maxBodyBytes?: number;
  /**
   * Largest body of `POST …/import` (a whole conversation export) in bytes; larger → 413. Default
   * 32 MiB. On Lambda the function URL caps every request at 6 MB: `harness import` uploads the
   * attachments first and sends the records only.
   */
  maxImportBytes?: number;
  /**
   * Longest a `?wait=true` POST blocks. After it the answer is 202 with the ids (as without
   * `wait`), so the client reads the rest from the stream. Default 60 s. The same bound holds for
   * an MCP `tools/call` without a task (past it, an error result naming the submission, which
   * keeps running) and for `tasks/result`.
   */
  maxRequestWaitMs?: number;
  /**
   * The time left to answer a request, ms, where something outside ends requests (on Lambda the
   * invocation's remaining time, which the function timeout ends): a `?wait=true` then answers its
   * 202 {@link REQUEST_WAIT_MARGIN_MS} before that, never cut off with the message admitted.
   */
  timeLeftMs?: (c: Context) => number | undefined;
  /**
   * A stream ends itself after this long and the client reconnects with Last-Event-ID. On Lambda,
   * pass less than the function timeout (client disconnects are invisible there). Default 15 min.
   */
  maxStreamMs?: number;
  /** A comment line is sent when a stream has been quiet this long. Default 15 s. */
  keepAliveMs?: number;
  /**
   * Poll of the log for appends made by other processes (in-process appends wake the stream at
   * once). It backs off to `maxPollMs` while nothing arrives. Default 250 ms
   * (`STREAM_POLL.embedded`; the http function passes `STREAM_POLL.serverless`).
   */
  pollMs?: number;
  /** Ceiling of the poll backoff. Default 1 s. */
  maxPollMs?: number;
  /** The SSE `retry:` hint: how long an EventSource waits before reconnecting. Default 1 s. */
  retryMs?: number;
  /**
   * Largest body `POST /attachments` takes. Default: the attachment policy's largest limit. On
   * Lambda pass less than the function URL's 6 MB request ceiling (binary bodies arrive base64):
   * larger files take a direct upload.
   */
  maxUploadBytes?: number;
  /**
   * Who is calling (ADR 0043): every `/agents` and `/attachments` route authenticates the request
   * (none → 401 with a `WWW-Authenticate` challenge) and reaches the runtime only as that principal
   * (`Runtime.as`), so the runtime's policy decides what it may touch. Without it every caller is
   * the operator. `/healthz` stays open; `/callbacks` keeps its own `callbacks.middleware`.
   */
  auth?: AuthOptions;
  /** Mounted before the `/agents` and `/attachments` routes (auth, rate limits…); `/healthz` stays open. */
  middleware?: MiddlewareHandler[];
  /**
   * The callback route (`POST /callbacks/:callbackId`, ADR 0025), which third parties call:
   * `middleware` replaces the app's `middleware` there (e.g. a bearer token of its own for the
   * outside systems that answer callbacks). Default: the app's `middleware`.
   */
  callbacks?: { middleware?: MiddlewareHandler[] };
  /**
   * Lets pages of these origins call the API from a browser (`hono/cors`: preflights answered for
   * every `/agents` route and `/healthz`). Off by default: then a browser request whose `Origin`
   * is not the app's own is refused with 403 `origin_not_allowed`, whatever the route, before
   * anything is stored (requests without `Origin`, as curl and servers send them, pass).
   */
  cors?: CorsOptions;
  /**
   * The host names (or addresses) the app answers to, matched against `Host` without its port;
   * `"loopback"` stands for `localhost`, 127.0.0.0/8 and ::1. Another `Host` gets 403
   * `host_not_allowed` (DNS rebinding). Default: any (`serve` sets `["loopback"]` when it binds
   * a loopback address).
   */
  allowedHosts?: readonly string[];
  /** Aborting it ends every open stream and `?wait=true` (the server's graceful shutdown). */
  shutdown?: AbortSignal;
  /** Where unexpected errors are reported (their detail never reaches the client). Default console.error. */
  log?: (message: string, err: unknown) => void;
}

/** How long before the end of its time (`timeLeftMs`) a `?wait=true` gives up and answers 202. */
export const REQUEST_WAIT_MARGIN_MS = 3_000;

/** The defaults of {@link AppOptions}. */
export const APP_DEFAULTS = {
  maxBodyBytes: 1024 * 1024,
  maxImportBytes: 32 * 1024 * 1024,
  maxRequestWaitMs: 60_000,
  maxStreamMs: STREAM_MAX_MS.embedded,
  keepAliveMs: 15_000,
  pollMs: STREAM_POLL.embedded.pollMs,
  maxPollMs: STREAM_POLL.embedded.maxPollMs,
  retryMs: 1_000,
} as const;

/**
 * The harness's HTTP surface over a runtime, as one Hono app: it runs on `@hono/node-server`
 * (see `serve`) and on Lambda response streaming alike.
 *
 * - `POST /agents/:agent/:instance` dispatches (202 `{submissionId, conversationId}`; `?wait=true` → 200
 *   with the settled outcome, or 202 after `maxRequestWaitMs`)
 * - `GET /agents/:agent/:instance[?session=]` streams the conversation's records as SSE (replay after
 *   Last-Event-ID, then live tail; 204 when there is nothing to send on an idle session)
 * - `POST /agents/:agent/:instance/steer` and `/followup` inject a message into the in-flight run
 * - `POST /agents/:agent/:instance/compact` admits a manual compaction of the session (202
 *   `{submissionId, conversationId}`; `?wait=true` → 200 with the outcome; 404 without a conversation)
 * - `GET /agents/:agent/:instance/submissions[/:submissionId]` list a session's submissions (the
 *   operator's view, `submission-routes.ts`)
 * - `POST /agents/:agent/:instance/submissions/:submissionId/approvals/:callId` (`{approved, reason?}`)
 *   decides a call that asked approval; `GET /agents/:agent/:instance/approvals?session=` lists the
 *   session's pending ones; `POST /callbacks/:callbackId` answers a deferred call
 *   (`wait-routes.ts`, ADR 0025)
 * - `POST /agents/:agent/:instance/submissions/:submissionId/cancel` (`{reason?}`) cancels a submission:
 *   200 `{submissionId, status: "cancelled", outcome}` once settled (again for an already
 *   cancelled one), 202 `{submissionId, status: "cancelling"}` while a running one stops; 404
 *   unknown, 409 `already_settled`
 * - `DELETE /agents/:agent/:instance[?session=&cancel=true]` deletes a session's conversation
 *   (`conversation-routes.ts`)
 * - `POST /attachments` (bytes → `{digest, mediaType, size}`), direct uploads and downloads
 *   (`attachment-routes.ts`)
 * - `POST /mcp`: every agent as an MCP tool (streamable HTTP, stateless; tasks are submissions,
 *   ADR 0051), with `GET /.well-known/oauth-protected-resource/mcp` when `auth` names its issuers
 * - `GET /console/api/activity` and `/console/api/records`: the console's reads (`console-routes.ts`, ADR 0054)
 * - `GET /healthz` answers `ok`
 *
 * Every error is JSON `{error, code}`. The app only decodes requests: ids, names and messages are
 * checked by the runtime, which answers with typed errors that map to statuses here.
 */
export function createApp(runtime: Runtime, options: AppOptions = {}): Hono {
  const opts = { ...APP_DEFAULTS, ...definedOnly(options) };
  for (const knob of Object.keys(APP_DEFAULTS) as (keyof typeof APP_DEFAULTS)[]) {
    const v = opts[knob];
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
      throw new Error(`createApp: ${knob} must be a positive number`);
    }
  }
  const log = options.log ?? ((message: string, err: unknown) => console.error(message, err));
  const timing = {
    maxStreamMs: opts.maxStreamMs,
    keepAliveMs: opts.keepAliveMs,
    pollMs: opts.pollMs,
    maxPollMs: Math.max(opts.pollMs, opts.maxPollMs),
    retryMs: opts.retryMs,
  };

  const app = new Hono<AppEnv>();
  app.onError((err, c) => toErrorResponse(c, err, log));
  app.notFound((c) => errorResponse(c, 404, { error: "not found", code: "not_found" }));

  // Before everything: a path with a `.` or `..` segment as the client sent it. A URL parser
  // resolves them away before routing, so a middleware that checks the routed path would see
  // another route than the one the raw path names (`/callbacks/../agents/…`, issue 33).
  app.use("*", async (c, next) => {
    if (hasDotSegment(rawPathOf(c))) {
      return errorResponse(c, 400, { error: 'request path has a "." or ".." segment', code: "invalid_request" });
    }
    await next();
  });
  // Before every route: a page the app does not trust gets nothing run and nothing stored.
  app.use("*", originGuard({ cors: options.cors, allowedHosts: options.allowedHosts }));
  if (options.cors) {
    const withCors = corsMiddleware(options.cors);
    app.use("/agents/*", withCors);
    app.use("/attachments", withCors);
    app.use("/attachments/*", withCors);
    app.use("/healthz", withCors);
    app.use(MCP_PATH, withCors);
  }

  app.get("/healthz", (c) => c.text("ok"));

  // The API's prefixes: each is authenticated, then handed the runtime as its caller.
  const api = ["/agents/*", "/attachments", "/attachments/*", "/console/api/*"];
  const caller = callerMiddleware(runtime, options.auth);
  for (const path of api) {
    for (const mw of options.middleware ?? []) app.use(path, mw);
    app.use(path, caller);
  }
  // MCP (ADR 0051): the same authentication and policy; in OIDC mode its 401 says where users sign in.
  const oauth = options.auth?.authorizationServers ?? [];
  for (const mw of options.middleware ?? []) app.use(MCP_PATH, mw);
  app.use(MCP_PATH, oauth.length > 0 ? callerMiddleware(runtime, options.auth, resourceMetadataChallenge) : caller);
  if (oauth.length > 0) mountResourceMetadata(app, oauth);
  for (const mw of options.callbacks?.middleware ?? options.middleware ?? []) app.use("/callbacks/*", mw);
  const maxUploadBytes = options.maxUploadBytes ?? Math.max(...Object.values(runtime.attachmentLimits().policy));
  if (!Number.isSafeInteger(maxUploadBytes) || maxUploadBytes <= 0) throw new Error("createApp: maxUploadBytes must be a positive integer");
  const limit = bodyLimit({
    maxSize: opts.maxBodyBytes,
    onError: (c) => errorResponse(c, 413, { error: `request body exceeds ${opts.maxBodyBytes} bytes`, code: "payload_too_large" }),
  });
  const importLimit = bodyLimit({
    maxSize: opts.maxImportBytes,
    onError: (c) => errorResponse(c, 413, { error: `import body exceeds ${opts.maxImportBytes} bytes`, code: "payload_too_large" }),
  });
  // Every request's body has a limit, counted as it streams in (a declared Content-Length over
  // it is refused before reading; a body without one is cut off at the limit), before any route
  // reads it. An import carries a whole conversation and `POST /attachments` a file: their own,
  // larger limits (the upload's is its route's).
  const mcpLimit = bodyLimit({
    maxSize: opts.maxBodyBytes,
    onError: (c) => jsonRpcError(c, 413, -32600, `Invalid Request: body exceeds ${opts.maxBodyBytes} bytes`, { code: "payload_too_large" }),
  });
  app.use("*", (c, next) => {
    if (c.req.method === "POST" && c.req.path === "/attachments") return next();
    if (c.req.path === MCP_PATH) return mcpLimit(c, next);
    return c.req.method === "POST" && c.req.path.startsWith("/agents/") && c.req.path.endsWith("/import") ? importLimit(c, next) : limit(c, next);
  });
  mountAttachmentRoutes(app, maxUploadBytes);
  mountConsoleRoutes(app);

  app.post("/agents/:agent/:instance", async (c) => {
    const json = await readJsonObject(c);
    const body = parseDispatchBody(json);
    const admitted = await c.var.caller.dispatch({
      ...pathIds(c),
      session: body.session,
      dispatchId: body.dispatchId,
      message: body.message,
    });
    return admittedResponse(c, admitted);
  });

  app.post("/agents/:agent/:instance/compact", async (c) => {
    const text = await c.req.text();
    const body = parseCompactBody(text.trim() === "" ? {} : parseJsonObject(text));
    return admittedResponse(c, await c.var.caller.compact({ ...pathIds(c), session: body.session }));
  });

  /** 202 with the ids; with `?wait=true`, 200 with the settled outcome (or 202 once `maxRequestWaitMs` passed). */
  async function admittedResponse(c: Context<AppEnv>, admitted: { submissionId: string; conversationId: string }): Promise<Response> {
    const ids = { submissionId: admitted.submissionId, conversationId: admitted.conversationId };
    if (!isTrue(c.req.query("wait"))) return c.json(ids, 202);

    const left = options.timeLeftMs?.(c);
    const waitMs = left === undefined ? opts.maxRequestWaitMs : Math.max(0, Math.min(opts.maxRequestWaitMs, left - REQUEST_WAIT_MARGIN_MS));
    const stop = AbortSignal.any([
      c.req.raw.signal,
      AbortSignal.timeout(waitMs),
      ...(options.shutdown ? [options.shutdown] : []),
    ]);
    let settled;
    try {
      settled = await c.var.caller.wait(admitted.submissionId, { signal: stop });
    } catch (err) {
      // Out of time (or shutting down): the work goes on; the client follows it on the stream.
      if (stop.aborted) return c.json({ ...ids, ...(await whereItIs(c, admitted.submissionId)) }, 202);
      throw err;
    }
    return c.json({ ...ids, ...settled }, 200);
  }

  /**
   * Where a submission a `?wait=true` stopped waiting for is: its status, and why it is not
   * progressing when it waits for its next try (ADR 0053). Nothing when the view cannot be read.
   */
  async function whereItIs(c: Context<AppEnv>, submissionId: string): Promise<{ status?: string; retry?: SubmissionRetryView }> {
    try {
      const view = await c.var.caller.submission({ ...pathIds(c), submissionId });
      return view.retry === undefined ? { status: view.status } : { status: view.status, retry: view.retry };
    } catch {
      return {};
    }
  }

  /** The steer and follow-up handlers: the same request, for one or the other runtime call. */
  const inboxHandler = (method: "steer" | "followUp") => async (c: Context<AppEnv>) => {
    const body = parseInjectBody(await readJsonObject(c));
    await c.var.caller[method]({ ...pathIds(c), session: body.session, body: body.body });
    return c.json({ status: "injected" }, 200);
  };
  const steerHandler = inboxHandler("steer");
  const followUpHandler = inboxHandler("followUp");
  app.post("/agents/:agent/:instance/steer", steerHandler);
  app.post("/agents/:agent/:instance/followup", followUpHandler);

  mountSubmissionRoutes(app);
  mountApprovalRoutes(app);
  mountCallbackRoute(app, runtime);
  mountConversationRoutes(app);
  mountMcpRoute(app, { maxRequestWaitMs: opts.maxRequestWaitMs, pollMs: opts.pollMs, shutdown: options.shutdown });

  app.post("/agents/:agent/:instance/submissions/:submissionId/cancel", async (c) => {
    const text = await c.req.text();
    const { reason } = parseCancelBody(text.trim() === "" ? {} : parseJsonObject(text));
    const result = await c.var.caller.cancel(c.req.param("submissionId") ?? "", reason, pathIds(c));
    return c.json(result, result.status === "cancelling" ? 202 : 200);
  });

  app.get("/agents/:agent/:instance", async (c) => {
    const caller = c.var.caller;
    const conversation = await caller.conversation({ ...pathIds(c), session: c.req.query("session") });
    const key = conversation.key;
    const afterId = c.req.header("Last-Event-ID") || c.req.query("lastEventId") || "";
    const first = await firstPage(caller, key, conversation.id, afterId);
    // Nothing to send and nothing coming: 204 makes a browser EventSource stop reconnecting.
    if (first.records.length === 0 && !first.live) return c.body(null, 204);
    c.header("X-Accel-Buffering", "no");
    return streamSSE(c, async (stream) => {
      try {
        await tailRecords(stream, caller, { key, conversationId: conversation.id, afterId, first }, timing, options.shutdown);
      } catch (err) {
        // Headers are gone: end the stream; the client resumes from its last id.
        log(`GET ${c.req.path} stream failed`, err);
      }
    });
  });

  // Routes a user adds (a webhook, a page) sit outside the API and its caller: a plain Hono.
  return app as unknown as Hono;
}

/**
 * The request's path as the client sent it, before a URL parser resolved `.` and `..`: the raw
 * request target on Node (`@hono/node-server` passes the `IncomingMessage` as `incoming`), the
 * event's path on Lambda (`hono/aws-lambda` passes the `event`); elsewhere the request URL's.
 */
function rawPathOf(c: Context): string {
  const env = c.env as { incoming?: { url?: unknown }; event?: { rawPath?: unknown; path?: unknown } } | undefined;
  const raw = env?.incoming?.url ?? env?.event?.rawPath ?? env?.event?.path;
  if (typeof raw === "string") return raw.split("?")[0]!;
  return new URL(c.req.url).pathname;
}

/** Whether a path has a segment that is `.` or `..`, as written or percent-encoded (`%2e%2E`). */
function hasDotSegment(path: string): boolean {
  return path.split(/[/\\]/).some((segment) => {
    let decoded = segment;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      // not a valid escape: compared as it is
    }
    return decoded === "." || decoded === "..";
  });
}

/** The agent and instance of the path, unchecked (the runtime checks them). */
function pathIds(c: Context<AppEnv>): { agent: string; instance: string } {
  return { agent: c.req.param("agent") ?? "", instance: c.req.param("instance") ?? "" };
}

function isTrue(value: string | undefined): boolean {
  return value === "true" || value === "1" || value === "";
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
