import type { AttachmentRef, ConversationRecord, TaskSpawnedPayload } from "../protocol/records.ts";
import type { AgentName, AgentResult, AnyAgents, DispatchResult } from "./agent-types.ts";
import { childSessionOf } from "./child-session.ts";
import type { DispatchMessage } from "../protocol/dispatch.ts";
import type { SubmissionStatus } from "../protocol/submission-view.ts";
import type { SubmissionDetail, SubmissionPage } from "../protocol/submission-view.ts";
import { idsOf, networkFailure, readJson, type CancelAnswer, type DispatchIds, type Outcome, type SettledResult } from "./answers.ts";
import { approvalMethods, type ApprovalMethods } from "./approvals.ts";
import { conversationTransferMethods, type ConversationTransferMethods } from "./conversation-transfer.ts";
import { attachmentUpload, type UploadOptions } from "./attachment-upload.ts";
import { HarnessHttpError } from "./http-error.ts";
import { recordStream, type StreamOptions, type WaitOptions } from "./record-stream.ts";
import { sigv4Signer, type SigV4Options } from "./sigv4.ts";

/** Request headers in any of the forms `fetch` accepts. */
export type ClientHeaders = Headers | Record<string, string> | [string, string][];

/**
 * The bearer token of {@link ClientOptions.token}: a string, or a function asked for it before
 * every request and every stream (re)connect, so a token refreshed meanwhile is the one sent.
 * `refresh: true` when the server has just refused the token it returned (a 401 on a stream's
 * reconnect): a caching provider should fetch a new one rather than answer the cached token.
 * An empty string sends no `Authorization` header (not signed in).
 */
export type ClientToken = string | ((context: { refresh: boolean }) => string | Promise<string>);

/** How to reach the harness. */
export interface ClientOptions {
  /** Where the HTTP app is mounted, e.g. `http://127.0.0.1:8484` (a path prefix is kept). */
  baseUrl: string;
  /**
   * Sent with every request (e.g. `Authorization`). A function is called per request, so a
   * token can be refreshed.
   */
  headers?: ClientHeaders | (() => ClientHeaders | Promise<ClientHeaders>);
  /**
   * The caller's bearer token (an OIDC/JWT access token, or the operator's `HARNESS_BEARER_TOKEN`),
   * sent as `Authorization: Bearer <token>` on every request and stream connection; it wins over an
   * `authorization` in `headers`. A function is asked per request and per stream reconnect (see
   * {@link ClientToken}); when a stream's reconnect is refused with 401, it is asked once more with
   * `refresh: true` before the stream fails with `unauthorized`. Not with `sigv4`, which signs the
   * same header. A refused token is a {@link HarnessHttpError} with `code: "unauthorized"` (401).
   */
  token?: ClientToken;
  /** The `fetch` to use. Default: the global one. */
  fetch?: typeof fetch;
  /**
   * Sign every request with AWS SigV4 (`true`: the defaults), for a harness behind an `AWS_IAM`
   * function URL (the construct's default) or API Gateway IAM auth. The streaming GET is signed
   * too, afresh on every reconnect. See {@link SigV4Options}.
   */
  sigv4?: boolean | SigV4Options;
}

/**
 * Where an API that talks to the harness (the AI SDK transport, `LiveConversation`,
 * `useConversation`) gets its client: a `client` made with `createClient`, or a `baseUrl` and
 * the same `token` option as {@link ClientOptions.token}, from which it makes one.
 */
export type ClientSource = { client: HarnessClient; baseUrl?: undefined; token?: undefined } | { client?: undefined; baseUrl: string; token?: ClientToken };

/** The client a {@link ClientSource} names. */
export function clientFrom(source: ClientSource): HarnessClient {
  if (source.client !== undefined) return source.client;
  if (typeof source.baseUrl !== "string") throw new TypeError("pass `client`, or `baseUrl` (and `token`)");
  return createClient({ baseUrl: source.baseUrl, ...(source.token === undefined ? {} : { token: source.token }) });
}

/** Options of {@link HarnessClient.dispatch} and {@link HarnessClient.dispatchAndWait}. */
export interface DispatchOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  /** Idempotency key: the same id and message again answer the same submission. */
  dispatchId?: string;
  signal?: AbortSignal;
}

/** Options of {@link HarnessClient.steer} and {@link HarnessClient.followUp}. */
export interface InjectOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  signal?: AbortSignal;
}

/** Options of {@link HarnessClient.cancel}. */
export interface CancelOptions {
  /** Why (default "cancelled by request"); the settlement's error is `cancelled: <reason>`. */
  reason?: string;
  signal?: AbortSignal;
}

/** Options of {@link HarnessClient.listSubmissions}. */
export interface ListSubmissionsOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  /** Only submissions in this status. */
  status?: SubmissionStatus;
  /** Page size (server default 20, at most 100). */
  limit?: number;
  /** The previous page's `next`. */
  after?: string;
  signal?: AbortSignal;
}

/**
 * A typed client for the harness's HTTP surface (`resolute-harness/http`). `A` is the type of
 * the server's agents map (`typeof agents`): agent names are then checked, and a settled
 * `result` typed from the agent's (or the dispatch's) `resultSchema`.
 */
export interface HarnessClient<A extends object = AnyAgents> extends ApprovalMethods, ConversationTransferMethods {
  /**
   * Dispatches a message to an agent instance; resolves once the submission is durable.
   * @throws {HarnessHttpError} e.g. 400 `invalid_dispatch`, 404 `unknown_agent`, 409 `dispatch_conflict`
   */
  dispatch(agent: AgentName<A>, instance: string, message: DispatchMessage, options?: DispatchOptions): Promise<DispatchIds>;
  /**
   * Dispatches and resolves with the settled outcome (a `failed` status resolves too). When the
   * server stops waiting first (202 after its `maxRequestWaitMs`), it follows the conversation stream to
   * the submission's `submission_settled` record instead.
   * @throws {HarnessHttpError} as {@link dispatch}
   */
  dispatchAndWait<N extends AgentName<A>, S = undefined>(
    agent: N,
    instance: string,
    message: DispatchMessage & { resultSchema?: S },
    options?: DispatchOptions,
  ): Promise<SettledResult<DispatchResult<A, N, S>>>;
  /**
   * Injects a message into the session's in-flight run, delivered at its next turn boundary.
   * @throws {HarnessHttpError} 409 `no_run_in_flight` when nothing is running
   */
  steer(agent: AgentName<A>, instance: string, body: string, options?: InjectOptions): Promise<void>;
  /**
   * Injects a message delivered when the in-flight run would otherwise stop (same submission).
   * @throws {HarnessHttpError} 409 `no_run_in_flight` when nothing is running
   */
  followUp(agent: AgentName<A>, instance: string, body: string, options?: InjectOptions): Promise<void>;
  /**
   * Admits a manual compaction of the session (a submission of its own, in the session's order);
   * resolves once it is durable. It settles `succeeded` with `result: {compacted, firstKeptEntryId?}`.
   * @throws {HarnessHttpError} 404 `conversation_not_found` when the session has no conversation
   */
  compact(agent: AgentName<A>, instance: string, options?: InjectOptions): Promise<DispatchIds>;
  /** {@link compact} and resolves with its settled outcome (following the stream after a 202, as {@link dispatchAndWait}). */
  compactAndWait(agent: AgentName<A>, instance: string, options?: InjectOptions): Promise<SettledResult>;
  /**
   * Cancels a submission of the instance: a queued or waiting one settles `failed`/`cancelled`
   * at once (`cancelled`, with the outcome); a running one stops at its next safe point
   * (`cancelling`; follow it with {@link waitForSettled}). Again for a cancelled one: `cancelled`.
   * @throws {HarnessHttpError} 404 `submission_not_found`, 409 `already_settled` (settled otherwise)
   */
  cancel(agent: AgentName<A>, instance: string, submissionId: string, options?: CancelOptions): Promise<CancelAnswer>;
  /**
   * The session's records, in order and each once: the replay after `after`, then the live tail.
   * When the server ends a stream (its time limit) or the connection drops, it reconnects from
   * the last record id read (Last-Event-ID semantics, sent as `?lastEventId=`) and misses nothing; it finishes when the session is idle (or parked on
   * subagents) and every record has been read: the server's 204. Breaking out of the loop
   * closes the connection.
   * @throws {HarnessHttpError} 404 `conversation_not_found` when the session has no conversation
   */
  stream(agent: AgentName<A>, instance: string, options?: StreamOptions): AsyncIterable<ConversationRecord>;
  /**
   * The records of the child a parent's `task_spawned` record names (its payload), as
   * {@link stream} reads them: the child is an ordinary session of its agent (`childSessionOf`).
   */
  followChild(spawned: Pick<TaskSpawnedPayload, "agent" | "childInstance">, options?: Omit<StreamOptions, "session">): AsyncIterable<ConversationRecord>;
  /**
   * Reads the session's records (after `options.after`) until `submissionId`'s
   * `submission_settled` record, and resolves with its outcome. While the session is idle or
   * parked on subagents it looks again with a backoff, so it waits as long as the submission
   * takes: pass a `signal` to bound it.
   */
  waitForSettled<N extends AgentName<A>>(agent: N, instance: string, submissionId: string, options?: WaitOptions): Promise<SettledResult<AgentResult<A, N>>>;
  /**
   * One page of a session's submissions, newest first (the operator's view): status, attempts,
   * times, the outcome with its usage. Pass the page's `next` as `after` for the older page.
   * @throws {HarnessHttpError} 400 `invalid_request` (bad status, limit or cursor)
   */
  listSubmissions(agent: AgentName<A>, instance: string, options?: ListSubmissionsOptions): Promise<SubmissionPage>;
  /**
   * One submission of the instance with its input, outcome and attempts.
   * @throws {HarnessHttpError} 404 `submission_not_found`
   */
  getSubmission(agent: AgentName<A>, instance: string, submissionId: string, options?: { signal?: AbortSignal }): Promise<SubmissionDetail>;
  /**
   * Uploads an attachment and resolves with its ref, to put in a message's `attachments`. A file
   * over `inlineLimit` goes straight to blob storage where the server offers direct uploads (S3
   * on AWS: declared by digest, verified by the server before any dispatch may use it); anything
   * else is `POST /attachments`. The same bytes give the same ref (content-addressed).
   * @throws {HarnessHttpError} 400 `invalid_attachment` (a type the server does not take, with the
   * allowed ones, a size over its type's limit, bytes that are not of the type), 413 `payload_too_large`
   */
  uploadAttachment(data: Uint8Array | Blob, mediaType: string, options?: UploadOptions): Promise<AttachmentRef>;
}

/**
 * Creates a client for a harness served over HTTP. It needs only `fetch`, `TextDecoder` and
 * `AbortSignal`, so it runs in Node 22+ and in browsers.
 *
 * Typed from the server's agents (a type-only import, so no server code reaches a browser):
 *
 *   import type { agents } from "./agents.ts"; // export const agents = {…} satisfies Record<string, AgentDefinition>
 *   const client = createClient<typeof agents>({ baseUrl });
 *   const { result } = await client.dispatchAndWait("triage", "acme", { kind: "user", body });
 *   // an unknown agent name does not compile; `result` has the type of triage's `resultSchema`
 */
export function createClient<A extends object = AnyAgents>(options: ClientOptions): HarnessClient<A> {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  // Calling the global fetch as a method of another object throws in browsers: keep it unbound.
  const doFetch: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const sign = options.sigv4 ? sigv4Signer(options.sigv4 === true ? {} : options.sigv4) : undefined;
  if (sign && options.token !== undefined) {
    throw new TypeError("createClient: `token` and `sigv4` both set the Authorization header; pass one");
  }
  const token = options.token;

  async function send(
    method: "GET" | "POST" | "DELETE",
    url: string,
    init: {
      body?: unknown;
      bytes?: { data: Uint8Array; contentType: string };
      headers?: Record<string, string>;
      signal?: AbortSignal;
      redirect?: RequestInit["redirect"];
      refreshToken?: boolean;
    },
  ): Promise<Response> {
    const configured = typeof options.headers === "function" ? await options.headers() : options.headers;
    let headers = new Headers(configured);
    for (const [name, value] of Object.entries(init.headers ?? {})) headers.set(name, value);
    const bearer = typeof token === "function" ? await token({ refresh: init.refreshToken === true }) : token;
    if (bearer) headers.set("authorization", `Bearer ${bearer}`);
    if (init.body !== undefined) headers.set("content-type", "application/json");
    if (init.bytes !== undefined) headers.set("content-type", init.bytes.contentType);
    const body = init.bytes?.data ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
    if (sign) headers = await sign({ method, url, headers, body });
    try {
      return await doFetch(url, { method, headers, body: body as RequestInit["body"], signal: init.signal, ...(init.redirect ? { redirect: init.redirect } : {}) });
    } catch (err) {
      throw networkFailure(err, url, init.signal);
    }
  }

  function agentUrl(agent: string, instance: string, suffix = ""): string {
    return `${baseUrl}/agents/${encodeURIComponent(agent)}/${encodeURIComponent(instance)}${suffix}`;
  }

  function dispatchBody(message: DispatchMessage, opts: DispatchOptions): Record<string, unknown> {
    const body: Record<string, unknown> = { ...message };
    if (opts.session !== undefined) body.session = opts.session;
    if (opts.dispatchId !== undefined) body.dispatchId = opts.dispatchId;
    return body;
  }

  async function inject(route: "steer" | "followup", agent: string, instance: string, body: string, opts: InjectOptions) {
    const payload: Record<string, unknown> = { body };
    if (opts.session !== undefined) payload.session = opts.session;
    const res = await send("POST", agentUrl(agent, instance, `/${route}`), { body: payload, signal: opts.signal });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    await res.body?.cancel();
  }

  const { stream, waitForSettled } = recordStream(send, agentUrl);

  /** POSTs an admission (a dispatch or a compaction) and answers its ids. */
  async function admitted(url: string, body: Record<string, unknown>, signal: AbortSignal | undefined): Promise<DispatchIds> {
    const res = await send("POST", url, { body, signal });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    return idsOf(res.status, await readJson(res));
  }

  /** POSTs an admission with `?wait=true` and resolves with the outcome (from the stream after a 202). */
  async function admittedAndSettled(
    agent: string,
    instance: string,
    suffix: string,
    body: Record<string, unknown>,
    opts: { session?: string; signal?: AbortSignal },
  ): Promise<Outcome> {
    const res = await send("POST", agentUrl(agent, instance, `${suffix}?wait=true`), { body, signal: opts.signal });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    const answer = await readJson(res);
    const ids = idsOf(res.status, answer);
    if (res.status === 200) return answer as unknown as SettledResult;
    // 202: the server stopped waiting; the outcome arrives on the stream.
    return waitForSettled(agent, instance, ids.submissionId, { session: opts.session, signal: opts.signal });
  }

  const compactBody = (opts: InjectOptions): Record<string, unknown> => (opts.session === undefined ? {} : { session: opts.session });

  const uploadAttachment = attachmentUpload(send, doFetch, baseUrl);

  // Checked untyped; the agents type only narrows what callers may pass and what they get.
  const client: HarnessClient = {
    ...approvalMethods(send, baseUrl, agentUrl),
    ...conversationTransferMethods(send, doFetch, baseUrl, agentUrl, uploadAttachment),
    dispatch: (agent, instance, message, opts = {}) => admitted(agentUrl(agent, instance), dispatchBody(message, opts), opts.signal),
    dispatchAndWait: (agent, instance, message, opts = {}) => admittedAndSettled(agent, instance, "", dispatchBody(message, opts), opts),
    compact: (agent, instance, opts = {}) => admitted(agentUrl(agent, instance, "/compact"), compactBody(opts), opts.signal),
    compactAndWait: (agent, instance, opts = {}) => admittedAndSettled(agent, instance, "/compact", compactBody(opts), opts),

    steer: (agent, instance, body, opts = {}) => inject("steer", agent, instance, body, opts),
    followUp: (agent, instance, body, opts = {}) => inject("followup", agent, instance, body, opts),
    async cancel(agent, instance, submissionId, opts = {}) {
      const body = opts.reason === undefined ? {} : { reason: opts.reason };
      const url = agentUrl(agent, instance, `/submissions/${encodeURIComponent(submissionId)}/cancel`);
      const res = await send("POST", url, { body, signal: opts.signal });
      if (!res.ok) throw await HarnessHttpError.fromResponse(res);
      const answer = await readJson(res);
      if (typeof answer.submissionId !== "string" || (answer.status !== "cancelled" && answer.status !== "cancelling")) {
        throw new HarnessHttpError(res.status, "unexpected_response", "response lacks submissionId/status");
      }
      return answer as unknown as CancelAnswer;
    },
    stream,
    followChild(spawned, opts = {}) {
      const child = childSessionOf(spawned);
      return stream(child.agent, child.instance, { ...opts, session: child.session });
    },
    waitForSettled,

    async listSubmissions(agent, instance, opts = {}) {
      const query = new URLSearchParams();
      if (opts.session !== undefined) query.set("session", opts.session);
      if (opts.status !== undefined) query.set("status", opts.status);
      if (opts.limit !== undefined) query.set("limit", String(opts.limit));
      if (opts.after !== undefined) query.set("after", opts.after);
      const qs = query.toString();
      const res = await send("GET", agentUrl(agent, instance, `/submissions${qs === "" ? "" : `?${qs}`}`), { signal: opts.signal });
      if (!res.ok) throw await HarnessHttpError.fromResponse(res);
      const page = await readJson(res);
      if (!Array.isArray(page.submissions)) throw new HarnessHttpError(res.status, "unexpected_response", "response lacks submissions");
      return page as unknown as SubmissionPage;
    },

    uploadAttachment,
    async getSubmission(agent, instance, submissionId, opts = {}) {
      const res = await send("GET", agentUrl(agent, instance, `/submissions/${encodeURIComponent(submissionId)}`), {
        signal: opts.signal,
      });
      if (!res.ok) throw await HarnessHttpError.fromResponse(res);
      return (await readJson(res)) as unknown as SubmissionDetail;
    },
  };
  return client as unknown as HarnessClient<A>;
}
