/**
 * The MCP servers of one attempt (ADR 0050): connects to each toolset's server when the attempt
 * starts, reads its tool list once, and hands the drive harness tools whose calls go over that
 * connection; closes them all when the attempt ends. The SDK is imported here, lazily: only an
 * attempt of an agent with MCP tools loads it (the drive imports this module on demand).
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { AgentToolResult } from "@earendil-works/pi-agent-core";
import { errorText } from "../errors.ts";
import type { HarnessTool } from "../agent/define-tool.ts";
import { approvalOf, keepsTool, McpToolsError, type McpToolset } from "../agent/mcp-tools.ts";
import { CALL_ID_META, watchingFetch } from "./mcp-call-streams.ts";
import { toolResultOf, type McpCallResult } from "./mcp-result.ts";

/** Default bound on connecting to a server and listing its tools. */
export const DEFAULT_MCP_CONNECT_TIMEOUT_MS = 30_000;
/** How long closing waits for messages still being sent (a cancellation, most of all). */
const CLOSE_FLUSH_MS = 2_000;
/** The largest delay a Node timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The MCP servers of one attempt: their tools, and how to let them go. */
export interface McpConnections {
  /** The tools, in the order of the toolsets and of each server's list. */
  tools: Map<McpToolset, HarnessTool[]>;
  /** Closes every connection (stdio servers are stopped); never throws. */
  close(): Promise<void>;
}

/**
 * Connects to every toolset's server (in parallel) and lists its tools.
 * @param options.signal aborts the connecting (the attempt stops)
 * @param options.toolTimeoutMs the harness's bound on one call (the SDK's own timeout is set past it)
 * @throws {McpToolsError} `mcp_server_unavailable` naming the first server that could not be used (the others are closed)
 */
export async function openMcpConnections(toolsets: readonly McpToolset[], options: { signal: AbortSignal; toolTimeoutMs: number }): Promise<McpConnections> {
  const opened: Array<Connection | undefined> = [];
  const closeAll = () => Promise.all(opened.map((c) => c && closeQuietly(c.client, c.transport))).then(() => undefined);
  const results = await Promise.allSettled(
    toolsets.map(async (toolset, i) => {
      const connection = await connect(toolset, options.signal);
      opened[i] = connection;
      return toolsOf(toolset, connection, await listTools(toolset, connection.client, options.signal), options.toolTimeoutMs);
    }),
  );
  const failed = results.findIndex((r) => r.status === "rejected");
  if (failed >= 0) {
    await closeAll();
    const toolset = toolsets[failed]!;
    const reason = (results[failed] as PromiseRejectedResult).reason;
    throw new McpToolsError("mcp_server_unavailable", `MCP server ${toolset.label} unavailable at attempt start: ${errorText(reason)}`, { cause: reason });
  }
  const tools = new Map<McpToolset, HarnessTool[]>();
  toolsets.forEach((toolset, i) => tools.set(toolset, (results[i] as PromiseFulfilledResult<HarnessTool[]>).value));
  return { tools, close: closeAll };
}

/** One server's connection, and the calls in flight on it that its HTTP streams can end. */
interface Connection {
  client: Client;
  transport: FlushingTransport;
  /** Aborts a call in flight (by harness call id) whose response stream broke. */
  inFlight: Map<string, AbortController>;
}

async function connect(toolset: McpToolset, signal: AbortSignal): Promise<Connection> {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const o = toolset.options;
  const inFlight = new Map<string, AbortController>();
  let inner: Transport;
  if ("url" in o) {
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const fetch = watchingFetch((callIds, error) => {
      for (const id of callIds) inFlight.get(id)?.abort(new Error(`the server's response stream broke: ${errorText(error)}`));
    });
    inner = new StreamableHTTPClientTransport(new URL(String(o.url)), { fetch, ...(o.headers ? { requestInit: { headers: o.headers } } : {}) });
  } else {
    const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    inner = new StdioClientTransport({
      command: o.command,
      ...(o.args ? { args: [...o.args] } : {}),
      env: o.env ?? getDefaultEnvironment(),
      ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
      stderr: "inherit",
    });
  }
  const transport = new FlushingTransport(inner);
  const client = new Client({ name: "resolute-harness", version: "1" }, { capabilities: {} });
  try {
    await client.connect(transport, { signal, timeout: o.connectTimeoutMs || DEFAULT_MCP_CONNECT_TIMEOUT_MS });
  } catch (err) {
    await closeQuietly(client, transport);
    throw err;
  }
  return { client, transport, inFlight };
}

/** The server's tools, every page of the list. */
async function listTools(toolset: McpToolset, client: Client, signal: AbortSignal) {
  const timeout = toolset.options.connectTimeoutMs || DEFAULT_MCP_CONNECT_TIMEOUT_MS;
  const tools: Awaited<ReturnType<Client["listTools"]>>["tools"] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/** The kept tools of a server as harness tools whose calls go over `client`. */
function toolsOf(toolset: McpToolset, { client, inFlight }: Connection, listed: Awaited<ReturnType<typeof listTools>>, toolTimeoutMs: number): HarnessTool[] {
  const o = toolset.options;
  // Past the harness's own bound: the harness times a call out (an error result), not the SDK.
  const timeout = Math.min(toolTimeoutMs + 60_000, MAX_TIMER_MS);
  return listed
    .filter((tool) => keepsTool(o, tool.name))
    .map((tool) => {
      const name = `${o.prefix ?? ""}${tool.name}`;
      const needsApproval = approvalOf(o, tool.name);
      return {
        name,
        label: tool.title ?? tool.annotations?.title ?? tool.name,
        description: tool.description ?? "",
        parameters: tool.inputSchema as object,
        ...(needsApproval !== undefined ? { needsApproval } : {}),
        ...(o.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: o.approvalTimeoutMs } : {}),
        execute: async (callId: string, params: unknown, signal?: AbortSignal): Promise<AgentToolResult<unknown>> => {
          const lost = new AbortController();
          inFlight.set(callId, lost);
          let result: McpCallResult;
          try {
            result = (await client.callTool(
              // The call id lets the harness end the call when its stream breaks; a server may read it too.
              { name: tool.name, arguments: params as Record<string, unknown>, _meta: { [CALL_ID_META]: callId } },
              undefined,
              { signal: signal ? AbortSignal.any([signal, lost.signal]) : lost.signal, timeout },
            )) as McpCallResult;
          } catch (err) {
            // Stopped by the run: the SDK sent the server MCP's cancellation; the drive knows why.
            if (signal?.aborted) throw err;
            // The server went away or refused the call: the model reads why, the run goes on.
            const why = lost.signal.aborted ? lost.signal.reason : err;
            return { content: [{ type: "text", text: `MCP server ${toolset.label}: ${tool.name} failed: ${errorText(why)}` }], details: {}, isError: true };
          } finally {
            inFlight.delete(callId);
          }
          return toolResultOf(result);
        },
      };
    });
}

/** Closes a connection: an HTTP session is ended (best effort), a stdio server stopped. */
async function closeQuietly(client: Client, transport: FlushingTransport): Promise<void> {
  try {
    await transport.endSession();
  } catch {
    // the server is gone or never had a session
  }
  try {
    await client.close();
  } catch {
    // already closed
  }
}

/**
 * A transport that, when closed, first lets the messages it is still sending arrive (within
 * {@link CLOSE_FLUSH_MS}): a call cancelled as its run stops sends `notifications/cancelled`
 * just before the attempt closes the connection, and over HTTP closing aborts every request in
 * flight, the cancellation's too.
 */
class FlushingTransport implements Transport {
  readonly #inner: Transport;
  readonly #sending = new Set<Promise<void>>();

  constructor(inner: Transport) {
    this.#inner = inner;
  }

  get onclose() {
    return this.#inner.onclose;
  }
  set onclose(f) {
    this.#inner.onclose = f;
  }
  get onerror() {
    return this.#inner.onerror;
  }
  set onerror(f) {
    this.#inner.onerror = f;
  }
  get onmessage() {
    return this.#inner.onmessage;
  }
  set onmessage(f) {
    this.#inner.onmessage = f;
  }
  get sessionId() {
    return this.#inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const sending = this.#inner.send(message, options);
    const tracked = sending.then(
      () => {},
      () => {},
    );
    this.#sending.add(tracked);
    void tracked.then(() => this.#sending.delete(tracked));
    return sending;
  }

  /** Ends an HTTP session (`DELETE`), so the server frees it at once. */
  async endSession(): Promise<void> {
    await this.#flush();
    const inner = this.#inner as Transport & { terminateSession?: () => Promise<void> };
    if (inner.sessionId !== undefined && typeof inner.terminateSession === "function") await inner.terminateSession();
  }

  async close(): Promise<void> {
    await this.#flush();
    await this.#inner.close();
  }

  async #flush(): Promise<void> {
    if (this.#sending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.#sending), new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_FLUSH_MS)))]);
    clearTimeout(timer);
  }
}
