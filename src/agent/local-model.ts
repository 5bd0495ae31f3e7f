import type { StreamFn } from "@earendil-works/pi-agent-core";
import { contentText, getCurrentTools, type Api, type JsonObject, type Message, type Model, type Tool } from "@earendil-works/pi-ai";
import { keylessModel, streamBlocks, type StreamBlock } from "./block-stream.ts";
import { CLOCK_TOOL_NAME } from "./clock-tool.ts";
import { contentDigest } from "../conversation/content-digest.ts";
import { PREVIOUS_SUMMARY_CLOSE, PREVIOUS_SUMMARY_OPEN, SUMMARY_TRANSCRIPT_CLOSE, SUMMARY_TRANSCRIPT_OPEN } from "../drive/summarizer.ts";

export interface LocalModelOptions {
  /** Pause between deltas in ms, so a demo streams visibly (default 0). */
  delayMs?: number;
  /** Characters per delta (default 4). */
  chunkSize?: number;
  /**
   * Benchmarks only (`bench/http.ts`, via BENCH_STAMP in the basic example): wait this many ms
   * before answering (a time to first token, so a client can attach its stream), then start a
   * text reply with `@<emit time>;` — `performance.timeOrigin + performance.now()`, taken just
   * before the first delta is pushed — so the client can measure emit → receive.
   */
  stampAfterMs?: number;
}

/**
 * The deterministic keyless model used by tests and the quickstart. It echoes the last user
 * message as `You said: <text>`, streamed in small deltas, and lists the images it received (type,
 * size and the digest of the bytes). It calls the agent's own tools (the ones the transcript
 * declares), so a tool can be seen running without a key:
 *
 * - a message `/<tool> <JSON object>` (e.g. `/refund {"amount": 240}`) calls that tool with those
 *   arguments (`/<tool>` alone: no arguments); an unknown tool, or arguments that are not a JSON
 *   object, get a reply saying so and listing the tools;
 * - a message mentioning "time" calls `clock`; a message naming (as a whole word) a tool with no
 *   required arguments calls it.
 *
 * Once the tool answered it replies with the result: `The time is <result>.` for the clock,
 * `` `<tool>` returned: <result> `` (or `` `<tool>` failed: <error> ``) for the others. Tool call
 * ids derive from the transcript position, so a recovered run asks for the same call. Asked for a
 * summary (by the harness's compaction), it answers deterministically with the previous summary's
 * lines followed by one shortened line per line of the transcript, so compactions work keyless
 * and repeated ones visibly build on each other. Tests that need other answers script them with
 * `scriptedModel()`.
 */
export function localModel(options: LocalModelOptions = {}): { model: Model<Api>; streamFn: StreamFn } {
  // It reads the images it is sent (it describes them), so it declares image input.
  const model: Model<Api> = { ...keylessModel("local-echo", "local"), input: ["text", "image"] };
  const stampAfterMs = options.stampAfterMs;
  const streamFn: StreamFn = (m, context, streamOptions) =>
    streamBlocks(m, stampAfterMs === undefined ? () => answer(context.messages) : () => stamped(answer(context.messages), stampAfterMs), {
      signal: streamOptions?.signal,
      chunkSize: options.chunkSize,
      delayMs: options.delayMs,
    });
  return { model, streamFn };
}

async function stamped(blocks: StreamBlock[], afterMs: number): Promise<StreamBlock[]> {
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  const first = blocks[0];
  if (first?.type !== "text") return blocks;
  return [{ type: "text", text: `@${(performance.timeOrigin + performance.now()).toFixed(3)};${first.text}` }, ...blocks.slice(1)];
}

function answer(messages: readonly Message[]): StreamBlock[] {
  let userIndex = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      userIndex = i;
      break;
    }
  }
  if (userIndex < 0) return [{ type: "text", text: "Hello! Send me a message." }];
  const user = messages[userIndex] as Extract<Message, { role: "user" }>;
  const text = typeof user.content === "string" ? user.content : contentText(user.content);
  if (text.includes(SUMMARY_TRANSCRIPT_OPEN)) return [{ type: "text", text: localSummary(text) }];
  const tools = getCurrentTools(messages);
  const request = toolRequest(text, tools);
  if (request !== undefined && "refusal" in request) return [{ type: "text", text: request.refusal }];
  if (request !== undefined) {
    const id = `call_${request.name}_${userIndex}`;
    const result = messages.slice(userIndex + 1).find((msg) => msg.role === "toolResult" && msg.toolCallId === id);
    if (result === undefined) return [{ type: "toolCall", id, name: request.name, arguments: request.arguments }];
    if (result.role === "toolResult") {
      const output = contentText(result.content);
      if (request.name === CLOCK_TOOL_NAME && !result.isError) return [{ type: "text", text: `The time is ${output}.` }];
      return [{ type: "text", text: `\`${request.name}\` ${result.isError ? "failed" : "returned"}: ${output}` }];
    }
  }
  return [{ type: "text", text: `You said: ${text}${describeImages(user.content)}` }];
}

/** A tool call the message asks for, or why it cannot be made. */
type ToolRequest = { name: string; arguments: JsonObject } | { refusal: string };

/**
 * What tool, if any, a user message asks the keyless model to call: `/<tool> <JSON>` explicitly;
 * else the clock when it mentions the time (whether or not the transcript declares it, as ever),
 * else the first declared tool without required arguments that it names as a whole word.
 */
function toolRequest(text: string, tools: readonly Tool[]): ToolRequest | undefined {
  const command = /^\s*\/([A-Za-z0-9_.-]+)(?:\s+([\s\S]*))?$/.exec(text);
  if (command !== null) {
    const name = command[1]!;
    const raw = (command[2] ?? "").trim();
    if (!tools.some((tool) => tool.name === name)) {
      return { refusal: `There is no tool \`${name}\`. ${toolList(tools)}` };
    }
    if (raw === "") return { name, arguments: {} };
    let args: unknown;
    try {
      args = JSON.parse(raw);
    } catch (err) {
      return { refusal: `The arguments of \`${name}\` are not JSON (${(err as Error).message}). Send \`/${name} {"name": value, ...}\`. ${toolList(tools)}` };
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      return { refusal: `The arguments of \`${name}\` must be a JSON object, like \`/${name} {"name": value}\`. ${toolList(tools)}` };
    }
    return { name, arguments: args as JsonObject };
  }
  if (/time/i.test(text)) return { name: CLOCK_TOOL_NAME, arguments: {} };
  const named = tools.find((tool) => tool.name !== CLOCK_TOOL_NAME && !hasRequiredArguments(tool) && namesWord(text, tool.name));
  return named === undefined ? undefined : { name: named.name, arguments: {} };
}

function hasRequiredArguments(tool: Tool): boolean {
  const required = (tool.parameters as { required?: unknown }).required;
  return Array.isArray(required) && required.length > 0;
}

/** Whether `text` contains `word` with no letter, digit or `_` on either side (case-insensitive). */
function namesWord(text: string, word: string): boolean {
  const haystack = text.toLowerCase();
  const needle = word.toLowerCase();
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) {
    const before = haystack[at - 1];
    const after = haystack[at + needle.length];
    if (!isWordChar(before) && !isWordChar(after)) return true;
  }
  return false;
}

function isWordChar(ch: string | undefined): boolean {
  return ch !== undefined && /[\p{L}\p{N}_]/u.test(ch);
}

/** The agent's tools, each with how to call it, for a reply that could not call one. */
function toolList(tools: readonly Tool[]): string {
  if (tools.length === 0) return "This agent has no tools.";
  return `This agent's tools: ${tools.map((tool) => `\`/${tool.name}\`${hasRequiredArguments(tool) ? ` (requires ${requiredNames(tool)})` : ""}`).join(", ")}.`;
}

function requiredNames(tool: Tool): string {
  return ((tool.parameters as { required?: string[] }).required ?? []).join(", ");
}

/**
 * What the keyless model says about the images it was sent, computed from the bytes it received
 * (type, size and digest), so a test can tell an image reached the model, not just its label.
 */
function describeImages(content: Extract<Message, { role: "user" }>["content"]): string {
  if (typeof content === "string") return "";
  const images = content.filter((block) => block.type === "image");
  if (images.length === 0) return "";
  const lines = images.map((image) => {
    const bytes = Buffer.from(image.data, "base64");
    return `- ${image.mimeType}, ${bytes.byteLength} bytes, ${contentDigest(bytes)}`;
  });
  return `\nI received ${images.length} image${images.length === 1 ? "" : "s"}:\n${lines.join("\n")}`;
}

/** Characters of each transcript line the local summary keeps. */
const SUMMARY_LINE_CHARS = 80;

/** The keyless summary: the previous summary's lines, then one shortened line per transcript line. */
function localSummary(request: string): string {
  const previous = between(request, PREVIOUS_SUMMARY_OPEN, PREVIOUS_SUMMARY_CLOSE);
  const transcript = between(request, SUMMARY_TRANSCRIPT_OPEN, SUMMARY_TRANSCRIPT_CLOSE) ?? "";
  const lines = previous === undefined ? [] : previous.split("\n").filter((l) => l.trim() !== "");
  for (const line of transcript.split("\n")) {
    if (line.trim() === "") continue;
    lines.push(`- ${line.length > SUMMARY_LINE_CHARS ? `${line.slice(0, SUMMARY_LINE_CHARS)}…` : line}`);
  }
  return lines.join("\n");
}

function between(text: string, open: string, close: string): string | undefined {
  const start = text.indexOf(open);
  const end = text.indexOf(close, start + open.length);
  if (start < 0 || end < 0) return undefined;
  return text.slice(start + open.length, end).trim();
}
