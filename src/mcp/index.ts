/**
 * `resolute-harness/mcp`: an agent uses an MCP server's tools (ADR 0050). {@link mcpTools} names
 * a server, over streamable HTTP (`url`, `headers`) or stdio (`command`, `args`, `env`: the
 * embedded shape only), and which of its tools the agent gets (`include`, `exclude`, `prefix`);
 * list it among the setup's `tools`. Each attempt connects when it starts and reads the tool list
 * once; every call is a tool call like any other (recorded before and after, never run twice
 * after a crash, `needsApproval` applies, a cancel sends the server MCP's cancellation). The MCP
 * SDK loads only when an agent with MCP tools runs.
 *
 * @example An agent with a remote server's tools (prefixed) and a local server's, one of which waits for a person:
 * ```ts
 * import { createRuntime, localModel } from "resolute-harness";
 * import { mcpTools } from "resolute-harness/mcp";
 * import { createMemoryStore } from "resolute-harness/memory";
 *
 * const docs = mcpTools({ url: "https://mcp.example.com/mcp", headers: { authorization: "Bearer ..." }, prefix: "docs_" });
 * const files = mcpTools({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], needsApproval: ["write_file"] });
 *
 * const runtime = createRuntime({
 *   store: createMemoryStore(),
 *   agents: { assistant: { initialize: () => ({ ...localModel(), tools: [docs, files] }) } },
 * });
 * await runtime.start();
 * ```
 *
 * @module
 */
export {
  mcpTools,
  isMcpToolset,
  McpToolsError,
  type McpToolset,
  type McpToolsOptions,
  type McpToolsCommonOptions,
  type McpHttpServerOptions,
  type McpStdioServerOptions,
  type McpToolsErrorCode,
} from "../agent/mcp-tools.ts";
