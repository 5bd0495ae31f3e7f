/**
 * For the MCP server's tests: a runtime with an echoing agent (held by "[hold]"), a structured
 * agent (a result schema) and the support agent (approvals), served over HTTP; and the SDK's own
 * `Client` connected to its `/mcp`, as an assistant would be.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { clockTool } from "../../src/agent/clock-tool.ts";
import { scriptedModel } from "../../src/agent/scripted-model.ts";
import type { AuthOptions } from "../../src/http/caller.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { serve, type ServeOptions, type ServerHandle } from "../../src/server/server.ts";
import type { Store } from "../../src/store/store.ts";
import { supportAgent, type ApprovalAgentLog } from "./approval-agent.ts";
import { Gate, gatedLocalModel } from "./test-server.ts";

/** The structured agent's result schema. */
export const VERDICT_SCHEMA = {
  type: "object",
  properties: { verdict: { type: "string" }, score: { type: "number" } },
  required: ["verdict", "score"],
} as const;

export interface McpTestServer {
  runtime: Runtime;
  store: Store;
  gate: Gate;
  log: ApprovalAgentLog;
  server: ServerHandle;
  url: string;
  close(): Promise<void>;
}

/** Agents `assistant` (echo, "[hold]" waits on the gate), `judge` (structured result) and `support` (approvals). */
export async function startMcpTestServer(options: ServeOptions & { auth?: AuthOptions; authorize?: Parameters<typeof createRuntime>[0]["authorize"] } = {}): Promise<McpTestServer> {
  const store = createMemoryStore();
  const gate = new Gate();
  const log: ApprovalAgentLog = { refunds: [], callbacks: [] };
  const judge = scriptedModel(Array.from({ length: 1_000 }, () => [{ text: '{"verdict": "fine", "score": 7}' }]));
  const { authorize, ...serveOptions } = options;
  const runtime = createRuntime({
    agents: {
      assistant: {
        description: "Echoes what you say.",
        initialize: () => ({ ...gatedLocalModel(gate), systemPrompt: "Echo.", tools: [clockTool()] }),
      },
      judge: { description: "Judges a text.", resultSchema: VERDICT_SCHEMA, initialize: () => ({ model: judge.model, streamFn: judge.streamFn }) },
      support: supportAgent(log),
    },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
    ...(authorize ? { authorize } : {}),
  });
  await runtime.start();
  const server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, ...serveOptions });
  return {
    runtime,
    store,
    gate,
    log,
    server,
    url: server.url,
    async close() {
      gate.release();
      await server.close();
      await runtime.close();
    },
  };
}

/** What an MCP client of the tests may do with an elicitation. */
export type ElicitAnswer = (message: string, params: Record<string, unknown>) => ElicitResult | Promise<ElicitResult>;

/** The SDK's client, connected to `<baseUrl>/mcp` (optionally with a bearer token and an elicitation handler). */
export async function mcpClient(baseUrl: string, options: { token?: string; elicit?: ElicitAnswer } = {}): Promise<Client> {
  const client = new Client(
    { name: "harness-test", version: "1" },
    { capabilities: options.elicit ? { elicitation: { form: {} } } : {} },
  );
  if (options.elicit) {
    const answer = options.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (request) => answer((request.params as { message: string }).message, request.params as Record<string, unknown>));
  }
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), {
    ...(options.token ? { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } } : {}),
  });
  await client.connect(transport);
  return client;
}
