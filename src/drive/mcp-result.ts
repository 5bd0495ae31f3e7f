import type { AgentToolResult } from "@earendil-works/pi-agent-core";

/** One content block of an MCP `tools/call` result, as far as the harness reads it. */
interface McpContent {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

/** An MCP `tools/call` result (`CallToolResult`), loosely: servers differ in what they send. */
export interface McpCallResult {
  content?: readonly McpContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** The pre-2025 shape: a bare `toolResult`. */
  toolResult?: unknown;
}

type Block = AgentToolResult<unknown>["content"][number];

/**
 * An MCP tool result as the harness's tool result: text and images pass as they are (the model
 * reads them; the outcome record holds them, spilled like any other when large); audio, embedded
 * resources and resource links become a line of text naming them (the model cannot read audio,
 * and a link is for the client); `structuredContent` is the outcome's `data` (and the text, when
 * the server sent no content); `isError` stays an error the model reads.
 */
export function toolResultOf(result: McpCallResult): AgentToolResult<unknown> {
  const content: Block[] = [];
  for (const block of result.content ?? []) content.push(blockOf(block));
  if (content.length === 0) {
    const only = result.structuredContent ?? result.toolResult;
    if (only !== undefined) content.push({ type: "text", text: JSON.stringify(only) });
  }
  const details = result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {};
  return { content, details, ...(result.isError === true ? { isError: true } : {}) };
}

function blockOf(block: McpContent): Block {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text ?? "" };
    case "image":
      if (typeof block.data === "string" && typeof block.mimeType === "string") return { type: "image", data: block.data, mimeType: block.mimeType };
      return { type: "text", text: "[image without data]" };
    case "audio":
      return { type: "text", text: `[audio ${block.mimeType ?? "of unknown type"}, ${base64Bytes(block.data)} bytes]` };
    case "resource": {
      const r = block.resource ?? {};
      if (typeof r.text === "string") return { type: "text", text: r.text };
      return { type: "text", text: `[resource ${r.uri ?? "(no uri)"}${r.mimeType ? ` (${r.mimeType})` : ""}, ${base64Bytes(r.blob)} bytes]` };
    }
    case "resource_link":
      return { type: "text", text: `[resource link ${block.uri ?? "(no uri)"}${block.name ? ` (${block.name})` : ""}]` };
    default:
      return { type: "text", text: `[${block.type} content]` };
  }
}

/** The byte length of a base64 string, without decoding it. */
function base64Bytes(data: string | undefined): number {
  if (typeof data !== "string") return 0;
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}
