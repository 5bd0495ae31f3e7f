/**
 * Agents as MCP tools (ADR 0051): each agent of the runtime's catalog is one tool whose input is a
 * message (and optionally the instance and session it goes to), and a settled submission is the
 * tool's result. Plain data in, plain data out: the SDK is not needed here.
 */
import type { ConversationRecord, SettledPayload } from "../protocol/records.ts";
import type { AgentCatalogEntry } from "../runtime/runtime-requests.ts";

/** The `_meta` key of a `tools/call` that names its dispatch id (the idempotency key of its submission). */
export const MCP_DISPATCH_ID_META = "resolute-harness/dispatchId";
/** The `_meta` key of a result or task naming the submission behind it. */
export const MCP_SUBMISSION_META = "resolute-harness/submissionId";

/** A tool as `tools/list` answers it. */
export interface McpToolDescriptor {
  name: string;
  description: string;
  inputSchema: { type: "object"; properties: Record<string, object>; required: string[] };
  outputSchema?: { type: "object"; [key: string]: unknown };
  execution: { taskSupport: "optional" };
}

/** A `tools/call` result (MCP's `CallToolResult`). */
export interface McpToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What a `tools/call` asks of an agent, its arguments checked for shape. */
export interface McpToolArguments {
  message: string;
  instance?: string;
  session?: string;
}

/** The tool of each agent, in catalog order. */
export function agentTools(catalog: readonly AgentCatalogEntry[]): McpToolDescriptor[] {
  return catalog.map((agent) => {
    const tool: McpToolDescriptor = {
      name: agent.name,
      description: agent.description ?? `The ${agent.name} agent: send it a message and get its reply.`,
      inputSchema: {
        type: "object",
        properties: {
          message: { type: "string", description: "What to ask the agent." },
          instance: { type: "string", description: "The agent instance (whose conversations these are). Default: your own (the principal's id)." },
          session: { type: "string", description: 'The session within the instance. Default "default".' },
        },
        required: ["message"],
      },
      execution: { taskSupport: "optional" },
    };
    const output = outputSchemaOf(agent.resultSchema);
    if (output) tool.outputSchema = output;
    return tool;
  });
}

/**
 * The tool's `outputSchema` for an agent's result schema: the schema itself when it describes an
 * object (MCP's structured content is an object), else an object with the result as `result`.
 */
export function outputSchemaOf(resultSchema: unknown): McpToolDescriptor["outputSchema"] | undefined {
  if (resultSchema === undefined || resultSchema === null || typeof resultSchema !== "object") return undefined;
  if ((resultSchema as { type?: unknown }).type === "object") return resultSchema as McpToolDescriptor["outputSchema"];
  return { type: "object", properties: { result: resultSchema }, required: ["result"] };
}

/** Checks a call's arguments for shape (a string: the problem, in words). */
export function toolArguments(args: unknown): McpToolArguments | string {
  if (args === null || typeof args !== "object" || Array.isArray(args)) return "arguments must be an object with a message";
  const { message, instance, session } = args as Record<string, unknown>;
  if (typeof message !== "string" || message === "") return "message must be a non-empty string";
  for (const [name, value] of [["instance", instance], ["session", session]] as const) {
    if (value !== undefined && value !== null && typeof value !== "string") return `${name} must be a string`;
  }
  return {
    message,
    ...(typeof instance === "string" && instance !== "" ? { instance } : {}),
    ...(typeof session === "string" && session !== "" ? { session } : {}),
  };
}

/**
 * The tool result of a settled submission: its reply text (and, with a result, the structured
 * content); a failed one is an error result naming its code.
 */
export function settledToolResult(submissionId: string, settled: SettledPayload, replyText: string, resultSchema: unknown): McpToolResult {
  const _meta = { [MCP_SUBMISSION_META]: submissionId };
  if (settled.status !== "succeeded") {
    const code = settled.errorCode ?? "run_failed";
    return { content: [{ type: "text", text: `submission ${submissionId} failed (${code}): ${settled.error ?? "no error given"}` }], isError: true, _meta };
  }
  const result: McpToolResult = { content: [{ type: "text", text: replyText !== "" ? replyText : JSON.stringify(settled.result ?? null) }], _meta };
  if (settled.result !== undefined) {
    // As the tool's outputSchema says: the object itself, or any other value as `result`.
    const objectSchema = isPlainObject(resultSchema) && resultSchema.type === "object";
    const bare = isPlainObject(settled.result) && (objectSchema || resultSchema === undefined);
    result.structuredContent = bare ? (settled.result as Record<string, unknown>) : { result: settled.result };
  }
  return result;
}

/** The error result of a call that outlived its wait: the submission goes on. */
export function stillRunningResult(submissionId: string, waitedMs: number): McpToolResult {
  return {
    content: [
      {
        type: "text",
        text:
          `submission ${submissionId} is still running after ${waitedMs} ms and keeps running: ` +
          `call again with the same dispatch id (_meta "${MCP_DISPATCH_ID_META}") or as a task to get its outcome`,
      },
    ],
    isError: true,
    _meta: { [MCP_SUBMISSION_META]: submissionId },
  };
}

/** The error result of a call the harness refused (nothing stored). */
export function refusedResult(code: string, message: string): McpToolResult {
  return { content: [{ type: "text", text: `${code}: ${message}` }], isError: true };
}

/**
 * A submission's reply: the text of its last completed assistant message that has text (the
 * completed message holds all of it, whatever deltas were folded).
 */
export function replyTextOf(records: readonly ConversationRecord[], submissionId: string): string {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!;
    if (record.kind !== "assistant_message_completed" || record.submissionId !== submissionId) continue;
    const content = (record.payload.message.body as { content?: unknown } | undefined)?.content;
    if (!Array.isArray(content)) continue;
    const text = content
      .map((block: { type?: unknown; text?: unknown }) => (block?.type === "text" && typeof block.text === "string" ? block.text : ""))
      .join("");
    if (text !== "") return text;
  }
  return "";
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
