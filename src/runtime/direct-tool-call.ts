/**
 * Calling one of an agent's tools directly with arguments (ADR 0054, the console's "dev only"):
 * the agent's setup as a run of that session would get it, the tool found by name and executed
 * outside any run, nothing written to the log. Off unless `RuntimeConfig.directToolCalls`
 * (`harness dev` turns it on): a tool acts on the world, and this skips its approval.
 */
import { randomUUID } from "node:crypto";
import { Forbidden, InvalidRequest } from "../errors.ts";
import type { AgentDefinition } from "../agent/agent-definition.ts";
import { localToolsOf } from "../agent/agent-setup.ts";
import type { ToolContent } from "../protocol/records.ts";
import { type KnowsAgent, sessionKeyOf } from "./requests.ts";

/** A direct call: the session whose setup provides the tool, the tool and its arguments. */
export interface DirectToolCall {
  agent: string;
  instance: string;
  /** Default `default`. */
  session?: string;
  toolName: string;
  /** The tool's arguments (a JSON object; default `{}`), as a model would give them. */
  args?: unknown;
}

/** What a direct call answers: the tool's result, or its error. */
export interface DirectToolResult {
  toolName: string;
  /** The tool's output blocks (an error's message as text when it threw). */
  content: ToolContent[];
  details?: unknown;
  isError: boolean;
  durationMs: number;
}

/** The longest a direct call may run. */
export const DIRECT_TOOL_CALL_MS = 60_000;
/** The largest arguments a direct call takes, as JSON. */
export const DIRECT_TOOL_ARGS_BYTES = 64 * 1024;

export async function callToolDirectly(
  enabled: boolean,
  definitions: ReadonlyMap<string, AgentDefinition>,
  env: (name: string) => string,
  call: DirectToolCall,
  knows: KnowsAgent,
): Promise<DirectToolResult> {
  if (!enabled) throw new Forbidden("callTool", "tools (direct tool calls are on in harness dev only: RuntimeConfig.directToolCalls)");
  const key = sessionKeyOf(call, knows);
  if (typeof call.toolName !== "string" || call.toolName === "") throw new InvalidRequest("toolName is required");
  const args = call.args ?? {};
  if (args === null || typeof args !== "object" || Array.isArray(args)) throw new InvalidRequest("args must be a JSON object");
  if (Buffer.byteLength(JSON.stringify(args), "utf8") > DIRECT_TOOL_ARGS_BYTES) throw new InvalidRequest(`args exceed ${DIRECT_TOOL_ARGS_BYTES} bytes`);
  const setup = await definitions.get(key.agent)!.initialize({ ...key, env });
  // The agent's own tools; an MCP server's are listed when an attempt starts and are not called directly.
  const tools = localToolsOf(setup);
  const tool = tools.find((t) => t.name === call.toolName);
  if (tool === undefined) {
    throw new InvalidRequest(`agent ${key.agent} has no tool ${JSON.stringify(call.toolName)}; its tools: ${tools.map((t) => t.name).join(", ") || "none"}`);
  }
  if (tool.execute === undefined) throw new InvalidRequest(`tool ${tool.name} waits for a callback: it cannot be called directly`);
  const started = Date.now();
  try {
    const result = await tool.execute(`direct-${randomUUID()}`, args as never, AbortSignal.timeout(DIRECT_TOOL_CALL_MS));
    return { toolName: tool.name, content: result.content as ToolContent[], details: result.details, isError: false, durationMs: Date.now() - started };
  } catch (err) {
    return { toolName: tool.name, content: [{ type: "text", text: err instanceof Error ? err.message : String(err) }], isError: true, durationMs: Date.now() - started };
  }
}
