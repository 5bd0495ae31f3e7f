import type { StreamFn } from "@earendil-works/pi-agent-core";
import {
  contentText,
  isContextOverflow,
  isRetryableAssistantError,
  normalizeContext,
  type Api,
  type AssistantMessage,
  type Message,
  type Model,
  type Usage,
} from "@earendil-works/pi-ai";
import type { ConversationRecord } from "../protocol/records.ts";
import { zeroUsage } from "../agent/block-stream.ts";
import { projectPath } from "./projection.ts";

/** Opens the transcript block of a summary request; the keyless local model recognises it. */
export const SUMMARY_TRANSCRIPT_OPEN = "<conversation-to-summarize>";
export const SUMMARY_TRANSCRIPT_CLOSE = "</conversation-to-summarize>";
/** Wraps the summary a request builds on. */
export const PREVIOUS_SUMMARY_OPEN = "<previous-summary>";
export const PREVIOUS_SUMMARY_CLOSE = "</previous-summary>";

const SUMMARY_SYSTEM_PROMPT = [
  "You maintain the working memory of an AI assistant whose conversation has grown too long for its context window.",
  "Write a summary that lets the assistant carry on the conversation without the original messages.",
  "Keep: the user's goals and constraints, decisions taken and why, facts learned from tools (names, numbers, ids, paths),",
  "work finished and work still open, and anything the assistant promised to do.",
  "Drop pleasantries and repetition. Write plain prose or short bullet points; do not address the user.",
].join(" ");

/** How many times a span that overflows the summarizer is split before giving up. */
const MAX_SPLIT_DEPTH = 3;
/** Per-message character caps tried, in order, when a single message overflows the summarizer. */
const SINGLE_MESSAGE_CAPS = [16_000, 4_000, 1_000] as const;

/** The summarizer could not produce a summary. `overflow` when even the smallest span overflowed. */
export class SummarizationError extends Error {
  readonly code = "summarization_failed";
  /** The provider error was transient (worth a fresh attempt). */
  readonly retryable: boolean;
  readonly overflow: boolean;
  constructor(message: string, options: { retryable: boolean; overflow: boolean }) {
    super(message);
    this.name = "SummarizationError";
    this.retryable = options.retryable;
    this.overflow = options.overflow;
  }
}

export interface SummarizeRequest {
  model: Model<Api>;
  streamFn: StreamFn;
  /** The summary being extended: repeated compactions stay incremental. */
  previousSummary?: string;
  /** The records whose history is summarized (path order). */
  summarized: readonly ConversationRecord[];
  signal?: AbortSignal;
}

export interface SummaryResult {
  summary: string;
  /** Usage summed over every summarizer call (a split span makes several). */
  usage: Usage;
  /** Summarizer calls made. */
  calls: number;
}

/**
 * Summarizes a span of history with the given model. The span is rendered as a plain-text
 * transcript (tool calls and results as lines, so no provider sees an orphan tool call), and the
 * previous summary is handed in to be extended rather than rewritten. A span that overflows the
 * summarizer's own context is split in halves and folded (the first half's summary becomes the
 * previous summary of the second), at most {@link MAX_SPLIT_DEPTH} levels deep; a single message
 * that still overflows is cut to shorter lengths. Throws {@link SummarizationError}.
 */
export async function summarize(request: SummarizeRequest): Promise<SummaryResult> {
  const messages = projectPath(request.summarized).messages;
  const state: SummaryResult = { summary: request.previousSummary ?? "", usage: zeroUsage(), calls: 0 };
  await fold(request, messages, state, 0);
  return state;
}

async function fold(request: SummarizeRequest, messages: Message[], state: SummaryResult, depth: number): Promise<void> {
  if (messages.length === 0) return;
  const reply = await call(request, renderTranscript(messages), state);
  if (reply.ok) {
    state.summary = reply.summary;
    return;
  }
  if (!reply.overflow) throw reply.error;
  if (messages.length > 1 && depth < MAX_SPLIT_DEPTH) {
    const middle = Math.ceil(messages.length / 2);
    await fold(request, messages.slice(0, middle), state, depth + 1);
    await fold(request, messages.slice(middle), state, depth + 1);
    return;
  }
  for (const cap of SINGLE_MESSAGE_CAPS) {
    const retry = await call(request, renderTranscript(messages, cap), state);
    if (retry.ok) {
      state.summary = retry.summary;
      return;
    }
    if (!retry.overflow) throw retry.error;
  }
  throw new SummarizationError("summarization overflowed the model's context window even on the smallest span", {
    retryable: false,
    overflow: true,
  });
}

type Reply = { ok: true; summary: string } | { ok: false; overflow: boolean; error: SummarizationError };

async function call(request: SummarizeRequest, transcript: string, state: SummaryResult): Promise<Reply> {
  const context = normalizeContext({
    systemPrompt: SUMMARY_SYSTEM_PROMPT,
    messages: [{ role: "user", content: summaryRequestText(state.summary, transcript), timestamp: Date.now() }],
  });
  let message: AssistantMessage;
  try {
    const stream = await request.streamFn(request.model, context, { signal: request.signal });
    message = await stream.result();
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    return { ok: false, overflow: false, error: new SummarizationError(`summarization failed: ${text}`, { retryable: true, overflow: false }) };
  }
  state.calls++;
  addUsage(state.usage, message.usage);
  if (message.stopReason === "error" || message.stopReason === "aborted") {
    const text = message.errorMessage || `summarizer stopped with reason "${message.stopReason}"`;
    if (isContextOverflow(message, request.model.contextWindow)) {
      return { ok: false, overflow: true, error: new SummarizationError(`summarization overflowed: ${text}`, { retryable: false, overflow: true }) };
    }
    const retryable = message.stopReason === "aborted" || isRetryableAssistantError(message);
    return { ok: false, overflow: false, error: new SummarizationError(`summarization failed: ${text}`, { retryable, overflow: false }) };
  }
  const summary = contentText(message.content.filter((c) => c.type === "text")).trim();
  if (summary === "") {
    return { ok: false, overflow: false, error: new SummarizationError("summarization returned no text", { retryable: true, overflow: false }) };
  }
  return { ok: true, summary };
}

/** The user message of a summary request. */
export function summaryRequestText(previousSummary: string, transcript: string): string {
  const parts: string[] = [];
  if (previousSummary !== "") parts.push(`${PREVIOUS_SUMMARY_OPEN}\n${previousSummary}\n${PREVIOUS_SUMMARY_CLOSE}`);
  parts.push(`${SUMMARY_TRANSCRIPT_OPEN}\n${transcript}\n${SUMMARY_TRANSCRIPT_CLOSE}`);
  parts.push(
    previousSummary === ""
      ? "Summarize the conversation above."
      : "Extend the previous summary with what the conversation above adds. Keep everything in it that still matters.",
  );
  return parts.join("\n\n");
}

/**
 * History as plain text, one line per message part (`[user]`, `[assistant]`, `[tool call]`,
 * `[tool result]`). `maxChars` cuts each message's text, for spans that overflow the summarizer.
 */
export function renderTranscript(messages: readonly Message[], maxChars = Infinity): string {
  const cut = (text: string) => (text.length > maxChars ? `${text.slice(0, maxChars)} […]` : text);
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        lines.push(`[user] ${cut(typeof message.content === "string" ? message.content : contentText(message.content))}`);
        break;
      case "assistant":
        for (const block of message.content) {
          if (block.type === "text" && block.text !== "") lines.push(`[assistant] ${cut(block.text)}`);
          else if (block.type === "toolCall") lines.push(`[tool call] ${block.name} ${cut(JSON.stringify(block.arguments ?? {}))}`);
        }
        break;
      case "toolResult":
        lines.push(`[tool result${message.isError ? ", error" : ""}] ${message.toolName}: ${cut(contentText(message.content))}`);
        break;
      default:
        break;
    }
  }
  return lines.join("\n");
}

/** Adds `more` into `total` (tokens and cost). */
export function addUsage(total: Usage, more: Usage | undefined): void {
  if (more === undefined) return;
  total.input += more.input;
  total.output += more.output;
  total.cacheRead += more.cacheRead;
  total.cacheWrite += more.cacheWrite;
  total.totalTokens += more.totalTokens;
  total.cost.input += more.cost.input;
  total.cost.output += more.cost.output;
  total.cost.cacheRead += more.cost.cacheRead;
  total.cost.cacheWrite += more.cost.cacheWrite;
  total.cost.total += more.cost.total;
}
