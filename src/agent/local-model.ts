import type { StreamFn } from "@earendil-works/pi-agent-core";
import { contentText, type Api, type Message, type Model } from "@earendil-works/pi-ai";
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
 * size and the digest of the bytes). When that message mentions "time" it
 * first calls the `clock` tool, then answers `The time is <result>.` Tool call ids derive from
 * the transcript position, so a recovered run asks for the same call. Asked for a summary (by
 * the harness's compaction), it answers deterministically with the previous summary's lines
 * followed by one shortened line per line of the transcript, so compactions work keyless and
 * repeated ones visibly build on each other.
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
  if (/time/i.test(text)) {
    const result = messages
      .slice(userIndex + 1)
      .find((msg) => msg.role === "toolResult" && msg.toolName === CLOCK_TOOL_NAME);
    if (result === undefined) {
      return [{ type: "toolCall", id: `call_clock_${userIndex}`, name: CLOCK_TOOL_NAME, arguments: {} }];
    }
    if (result.role === "toolResult") {
      return [{ type: "text", text: `The time is ${contentText(result.content)}.` }];
    }
  }
  return [{ type: "text", text: `You said: ${text}${describeImages(user.content)}` }];
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
