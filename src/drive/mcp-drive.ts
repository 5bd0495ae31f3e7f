import { agentBudgets, localToolsOf, type AgentSetup } from "../agent/agent-setup.ts";
import { isMcpToolset, McpToolsError, type McpToolset } from "../agent/mcp-tools.ts";
import { errorText } from "../errors.ts";
import type { DriveOutcome } from "./drive-outcome.ts";

/** What of a drive's context the MCP step reads (the drive's own `DriveContext` is one). */
interface McpDriveContext {
  setup: AgentSetup;
  input: { kind: string };
  signal: AbortSignal;
  cancel?: AbortSignal | undefined;
}

/**
 * A drive whose setup lists MCP toolsets (ADR 0050): their servers are connected and their tool
 * lists read first, once for the attempt, and the connections closed when it ends. A server
 * that cannot be used then fails the attempt as a provider that cannot be reached does
 * (`transient`: retried after a backoff, charged to the attempt budget), before anything is
 * recorded. A manual compaction runs no tool and connects to nothing. `run` is the drive itself,
 * given the setup with each toolset replaced by its server's tools.
 */
export async function driveWithMcp<C extends McpDriveContext>(ctx: C, toolsets: McpToolset[], run: (ctx: C) => Promise<DriveOutcome>): Promise<DriveOutcome> {
  const local = localToolsOf(ctx.setup);
  if (ctx.input.kind === "compact") return run({ ...ctx, setup: { ...ctx.setup, tools: local } });
  const stop = ctx.cancel ? AbortSignal.any([ctx.signal, ctx.cancel]) : ctx.signal;
  let connections: Awaited<ReturnType<typeof import("./mcp-connection.ts").openMcpConnections>>;
  try {
    const { openMcpConnections } = await import("./mcp-connection.ts");
    connections = await openMcpConnections(toolsets, { signal: stop, toolTimeoutMs: agentBudgets(ctx.setup).toolTimeoutMs });
  } catch (err) {
    if (ctx.signal.aborted) return { kind: "interrupted" };
    // Cancelled while connecting: the drive settles the cancellation (it runs nothing).
    if (ctx.cancel?.aborted) return run({ ...ctx, setup: { ...ctx.setup, tools: local } });
    return { kind: "transient", error: errorText(err) };
  }
  try {
    // In the order the setup lists them, each server's tools where its toolset stood.
    const tools = (ctx.setup.tools ?? []).flatMap((t) => (isMcpToolset(t) ? (connections.tools.get(t) ?? []) : [t]));
    const names = new Set<string>();
    for (const tool of tools) {
      if (names.has(tool.name)) {
        const error = new McpToolsError("mcp_tool_name_collision", `two tools are named "${tool.name}": give the MCP toolset a prefix (mcpTools({..., prefix: "server_"})) or exclude one`);
        return { kind: "failed", errorCode: "run_failed", error: error.message };
      }
      names.add(tool.name);
    }
    return await run({ ...ctx, setup: { ...ctx.setup, tools } });
  } finally {
    // Not awaited: the outcome need not wait for the servers to go (a stdio server is given 2 s
    // to exit after its stdin closes, then SIGTERM, as the MCP spec asks).
    void connections.close();
  }
}
