/**
 * One MCP server per request over the caller's face of the runtime (ADR 0051): the SDK's
 * low-level `Server` with handlers for `tools/list`, `tools/call` and the task methods, each of
 * which reads and writes through `CallerRuntime`, so MCP passes the same policy as the HTTP API
 * and keeps nothing between requests. The SDK is loaded on the first MCP request.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { encodeTime } from "ulid";
import { isHarnessError } from "../errors.ts";
import type { ConversationRecord, SettledPayload } from "../protocol/records.ts";
import type { SubmissionSummary } from "../protocol/submission-view.ts";
import type { CallerRuntime } from "../runtime/caller-runtime.ts";
import { approvalElicitation } from "./mcp-approvals.ts";
import { decodeTaskCursor, encodeTaskCursor, taskOf, type McpTask } from "./mcp-tasks.ts";
import {
  agentTools,
  MCP_DISPATCH_ID_META,
  refusedResult,
  replyTextOf,
  settledToolResult,
  stillRunningResult,
  toolArguments,
  type McpToolResult,
} from "./mcp-tools.ts";

/** The SDK modules the MCP route uses, loaded once on its first request. */
export interface McpSdk {
  Server: typeof import("@modelcontextprotocol/sdk/server/index.js").Server;
  Transport: typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js").WebStandardStreamableHTTPServerTransport;
  types: typeof import("@modelcontextprotocol/sdk/types.js");
}

let sdk: Promise<McpSdk> | undefined;

/** The SDK, imported on first use: an app that never serves MCP never loads it. */
export function loadMcpSdk(): Promise<McpSdk> {
  sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(([server, transport, types]) => ({ Server: server.Server, Transport: transport.WebStandardStreamableHTTPServerTransport, types }));
  return sdk;
}

/** What the MCP handlers need besides the caller. */
export interface McpServerOptions {
  /** Longest a `tools/call` without a task, or a `tasks/result`, waits for the outcome. */
  maxRequestWaitMs: number;
  /** How often progress is read from the log when no append in this process wakes it. */
  pollMs: number;
  /** Aborted at shutdown: waits end. */
  shutdown?: AbortSignal;
  /** Largest page of `tasks/list`. */
  taskPageSize?: number;
  /** The HTTP request's own signal (the client went away): its waits end. */
  signal?: AbortSignal;
}

/** Sends a message on the response stream of one request (the elicitations of `tasks/result`). */
type SendOnStream = (message: JSONRPCMessage, relatedRequestId: string | number) => Promise<void>;

/** The server and its transport for one HTTP request, stateless (no session id). */
export async function mcpServerFor(caller: CallerRuntime, options: McpServerOptions): Promise<{ server: Server; transport: WebStandardStreamableHTTPServerTransport }> {
  const { Server: ServerClass, Transport, types } = await loadMcpSdk();
  const { McpError, ErrorCode } = types;
  const server = new ServerClass(
    { name: "resolute-harness", version: "1" },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      instructions: "Each tool is an agent: send it a message, get its reply. Long work runs as a task (its id is the submission id).",
    },
  );
  const transport = new Transport({ sessionIdGenerator: undefined });
  const send: SendOnStream = (message, relatedRequestId) => transport.send(message, { relatedRequestId });
  const catalog = () => caller.agentCatalog();
  const defaultInstance = caller.principal.id;

  /** A harness refusal as a JSON-RPC error of the task methods (a task the caller may not see is not found). */
  const taskError = (taskId: string, err: unknown): never => {
    if (isHarnessError(err, "submission_not_found") || isHarnessError(err, "invalid_request")) {
      throw new McpError(ErrorCode.InvalidParams, `task not found: ${taskId}`);
    }
    if (isHarnessError(err)) throw new McpError(ErrorCode.InvalidParams, `${err.code}: ${err.message}`, { code: err.code });
    throw err;
  };
  const findTask = async (taskId: unknown) => {
    if (typeof taskId !== "string") throw new McpError(ErrorCode.InvalidParams, "taskId must be a string");
    try {
      return await caller.submissionById(taskId);
    } catch (err) {
      return taskError(taskId, err);
    }
  };

  /** Waits for a submission's settlement up to the request's limit: undefined past it. */
  const waitSettled = async (submissionId: string, signal: AbortSignal): Promise<SettledPayload | undefined> => {
    const stop = AbortSignal.any([
      signal,
      AbortSignal.timeout(options.maxRequestWaitMs),
      ...(options.shutdown ? [options.shutdown] : []),
      ...(options.signal ? [options.signal] : []),
    ]);
    try {
      return await caller.wait(submissionId, { signal: stop });
    } catch (err) {
      if (stop.aborted) return undefined;
      throw err;
    }
  };

  /** The tool result of a settled submission, its reply read from the log (from its admission on). */
  const toolResultOf = async (agent: string, conversationId: string, submissionId: string, createdAt: number, settled: SettledPayload): Promise<McpToolResult> => {
    const records = await readSince(caller, conversationId, createdAt);
    const schema = catalog().find((entry) => entry.name === agent)?.resultSchema;
    return settledToolResult(submissionId, settled, replyTextOf(records, submissionId), schema);
  };

  server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools: agentTools(catalog()) }) as never);

  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: rawArgs, _meta } = request.params;
    if (!caller.hasAgent(name)) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}: no agent by that name`);
    const args = toolArguments(rawArgs);
    if (typeof args === "string") throw new McpError(ErrorCode.InvalidParams, args);
    const dispatchId = (_meta as Record<string, unknown> | undefined)?.[MCP_DISPATCH_ID_META];
    if (dispatchId !== undefined && typeof dispatchId !== "string") throw new McpError(ErrorCode.InvalidParams, `_meta "${MCP_DISPATCH_ID_META}" must be a string`);
    const address = { agent: name, instance: args.instance ?? defaultInstance, ...(args.session ? { session: args.session } : {}) };
    let admitted;
    const dispatchedAt = Date.now();
    try {
      admitted = await caller.dispatch({ ...address, ...(dispatchId ? { dispatchId } : {}), message: { kind: "user", body: args.message } });
    } catch (err) {
      if (isHarnessError(err) && err.code !== "store_failure" && err.code !== "queue_unavailable") return refusedResult(err.code, err.message) as never;
      throw err;
    }
    if (request.params.task !== undefined) {
      // A task: its id is the submission's, its state the stored row's.
      const detail = await caller.submission({ agent: name, instance: address.instance, submissionId: admitted.submissionId });
      return { task: taskOf(detail) } as never;
    }
    const progressToken = _meta?.progressToken;
    // A replay's records may be older than this request: read from its admission.
    const createdAt = admitted.replayed ? (await caller.submission({ agent: name, instance: address.instance, submissionId: admitted.submissionId })).createdAt : dispatchedAt;
    const progress = progressToken === undefined ? undefined : followText(caller, admitted.conversationId, admitted.submissionId, createdAt, options.pollMs, async (text, n) => {
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: n, message: text } });
    });
    try {
      const settled = await waitSettled(admitted.submissionId, extra.signal);
      if (settled === undefined) return stillRunningResult(admitted.submissionId, options.maxRequestWaitMs) as never;
      await progress?.flush();
      return (await toolResultOf(name, admitted.conversationId, admitted.submissionId, createdAt, settled)) as never;
    } finally {
      progress?.stop();
    }
  });

  server.setRequestHandler(types.GetTaskRequestSchema, async (request) => {
    const { detail } = await findTask(request.params.taskId);
    return taskOf(detail) as never;
  });

  server.setRequestHandler(types.GetTaskPayloadRequestSchema, async (request, extra) => {
    const taskId = request.params.taskId;
    let { address, detail } = await findTask(taskId);
    if (taskOf(detail).status === "input_required") {
      // Asked on this request's stream; the answers come back as POSTs any instance decides.
      const pending = await caller.pendingApprovals({ agent: address.agent, instance: address.instance, session: detail.session });
      for (const approval of pending.filter((p) => p.submissionId === taskId)) {
        await send(approvalElicitation({ submissionId: taskId, callId: approval.callId, toolName: approval.toolName, args: approval.args }) as JSONRPCMessage, extra.requestId);
      }
    }
    const settled = detail.status === "settled" && detail.outcome ? detail.outcome : await waitSettled(taskId, extra.signal);
    if (settled === undefined) {
      throw new McpError(ErrorCode.RequestTimeout, `task ${taskId} has not finished after ${options.maxRequestWaitMs} ms and keeps running: poll tasks/get, then call tasks/result again`);
    }
    if (detail.status !== "settled") ({ detail } = await findTask(taskId));
    const result = await toolResultOf(address.agent, detail.conversationId, taskId, detail.createdAt, settled);
    return { ...result, _meta: { ...result._meta, "io.modelcontextprotocol/related-task": { taskId } } } as never;
  });

  server.setRequestHandler(types.CancelTaskRequestSchema, async (request, extra) => {
    const taskId = request.params.taskId;
    const { address, detail } = await findTask(taskId);
    const status = taskOf(detail).status;
    if (status === "completed" || status === "failed" || status === "cancelled") {
      throw new McpError(ErrorCode.InvalidParams, `cannot cancel task ${taskId}: it is already ${status}`);
    }
    let answer;
    try {
      answer = await caller.cancel(taskId, "cancelled by the MCP client", { agent: address.agent, instance: address.instance });
    } catch (err) {
      return taskError(taskId, err);
    }
    // A running submission stops at its next safe point: wait (briefly) to report it settled.
    if (answer.status === "cancelling") await waitSettled(taskId, AbortSignal.any([extra.signal, AbortSignal.timeout(10_000)]));
    const after = await findTask(taskId);
    return taskOf(after.detail) as never;
  });

  server.setRequestHandler(types.ListTasksRequestSchema, async (request) => {
    const agents = catalog();
    const cursor = request.params?.cursor === undefined ? { agent: 0 } : decodeTaskCursor(request.params.cursor);
    if (cursor === undefined) throw new McpError(ErrorCode.InvalidParams, "invalid cursor");
    const tasks: McpTask[] = [];
    const limit = options.taskPageSize ?? 50;
    for (let i = cursor.agent; i < agents.length; i++) {
      let page;
      try {
        page = await caller.listSubmissions({ agent: agents[i]!.name, instance: defaultInstance, limit, ...(i === cursor.agent && cursor.after ? { after: cursor.after } : {}) });
      } catch (err) {
        // An agent whose instance the caller may not read, or an id it cannot be: none of its tasks.
        if (isHarnessError(err, "forbidden") || isHarnessError(err, "invalid_request")) continue;
        throw err;
      }
      tasks.push(...page.submissions.map((s: SubmissionSummary) => taskOf(s)));
      if (page.next !== undefined) return { tasks, nextCursor: encodeTaskCursor({ agent: i, after: page.next }) } as never;
      if (tasks.length >= limit && i + 1 < agents.length) return { tasks, nextCursor: encodeTaskCursor({ agent: i + 1 }) } as never;
    }
    return { tasks } as never;
  });

  await server.connect(transport);
  return { server, transport };
}

/**
 * How far before a submission's admission its records may start: record ids are stamped by the
 * appending process's clock (a worker's, on Lambda), which may be behind the admitting one's.
 */
const CLOCK_SKEW_MARGIN_MS = 5 * 60_000;

/**
 * A record offset below every record id minted from `ms` (less the skew margin) on, so a read
 * after it costs what the submission wrote, not the conversation's whole history.
 */
function recordFloor(ms: number): string {
  return encodeTime(Math.max(0, ms - CLOCK_SKEW_MARGIN_MS), 10) + "0".repeat(16);
}

/** The records of a conversation from about `sinceMs` on, page by page. */
async function readSince(caller: CallerRuntime, conversationId: string, sinceMs: number): Promise<ConversationRecord[]> {
  const all: ConversationRecord[] = [];
  let after = recordFloor(sinceMs);
  for (;;) {
    const page = await caller.records(conversationId, after, 1_000);
    all.push(...page);
    if (page.length < 1_000) return all;
    after = page.at(-1)!.id;
  }
}

/**
 * Follows a submission's streamed text while its call waits, handing each new piece to `emit`
 * (progress notifications): woken by appends in this process, polled for the others'.
 */
function followText(caller: CallerRuntime, conversationId: string, submissionId: string, sinceMs: number, pollMs: number, emit: (text: string, n: number) => Promise<void>) {
  let after = recordFloor(sinceMs);
  let count = 0;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const readNew = async () => {
    for (;;) {
      const page = await caller.records(conversationId, after, 500);
      for (const record of page) {
        after = record.id;
        if (record.kind === "assistant_text_delta" && record.submissionId === submissionId && record.payload.text !== "") {
          await emit(record.payload.text, ++count);
        }
      }
      if (page.length < 500) return;
    }
  };
  const wake = () => {
    if (stopped) return;
    running = running.then(readNew).catch(() => {
      // A failed read is retried on the next wake: progress is best effort.
    });
  };
  const unsubscribe = caller.onAppend(conversationId, wake);
  const timer = setInterval(wake, pollMs);
  wake();
  return {
    /** Reads what is left (the settlement's last deltas). */
    async flush() {
      wake();
      await running;
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      unsubscribe();
    },
  };
}
