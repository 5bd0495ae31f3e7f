import {
  createAssistantMessageEventStream,
  type Api,
  type AssistantMessage,
  type AssistantMessageEventStream,
  type JsonObject,
  type Model,
  type TextContent,
  type ThinkingContent,
  type ToolCall,
  type Usage,
} from "@earendil-works/pi-ai";

/** One piece of a keyless model's answer, streamed in order. */
export type StreamBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "toolCall"; id: string; name: string; arguments: JsonObject; thoughtSignature?: string }
  /** Ends the response with `stopReason` "error" (or "aborted") and this `errorMessage`. */
  | { type: "error"; message: string; reason?: "error" | "aborted" }
  /** Runs at this point of the stream; the stream waits for it. */
  | { type: "hook"; run: (signal: AbortSignal | undefined) => void | Promise<void> };

export interface BlockStreamOptions {
  signal?: AbortSignal;
  /** Characters per text/thinking delta (default 4). */
  chunkSize?: number;
  /** Message timestamp source (default `Date.now`). */
  now?: () => number;
  /** Pause between deltas, in ms (default 0: a microtask). */
  delayMs?: number;
}

/** Usage with every count and cost zero. */
export function zeroUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/** An assistant message of `model` with no content yet (a stream's start, or a failure before any). */
export function emptyAssistantMessage(
  model: Model<Api>,
  timestamp: number,
  stopReason: AssistantMessage["stopReason"],
): AssistantMessage {
  return { role: "assistant", content: [], api: model.api, provider: model.provider, model: model.id, usage: zeroUsage(), stopReason, timestamp };
}

/** Ends a response from outside (a timeout, an abort) with an error event; a no-op once it has ended. */
export function endStream(
  stream: AssistantMessageEventStream,
  model: Model<Api>,
  now: number,
  reason: "error" | "aborted",
  errorMessage: string,
): void {
  const error: AssistantMessage = { ...emptyAssistantMessage(model, now, reason), errorMessage };
  stream.push({ type: "error", reason, error });
  stream.end(error);
}

/** A response that is nothing but an error. */
export function failedStream(model: Model<Api>, now: number, reason: "error" | "aborted", errorMessage: string): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  endStream(stream, model, now, reason, errorMessage);
  return stream;
}

/** A keyless model descriptor (no provider behind it: the stream function is the model). */
export function keylessModel(id: string, provider: string): Model<Api> {
  return {
    id,
    name: id,
    api: provider,
    provider,
    baseUrl: "",
    reasoning: true,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 200_000,
    maxTokens: 8_192,
  };
}

/** Splits on code points so a delta never cuts a surrogate pair. */
function chunks(text: string, size: number): string[] {
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""));
  return out;
}

/**
 * Streams `blocks` as one assistant response with pi-ai's event protocol, deterministically
 * (fixed chunking, ids from the blocks). Honours `options.signal`: an abort between deltas ends
 * the response as `aborted`, as a real provider does. Blocks may be produced lazily (`produce`
 * runs once, when the stream starts), so a script can look at what it was sent.
 */
export function streamBlocks(
  model: Model<Api>,
  produce: () => StreamBlock[] | Promise<StreamBlock[]>,
  options: BlockStreamOptions = {},
): AssistantMessageEventStream {
  const out = createAssistantMessageEventStream();
  const now = options.now ?? Date.now;
  const size = Math.max(1, options.chunkSize ?? 4);
  const signal = options.signal;
  const msg = emptyAssistantMessage(model, now(), "pending");
  const pause = (): Promise<void> =>
    options.delayMs ? new Promise((r) => setTimeout(r, options.delayMs)) : Promise.resolve();
  const end = (reason: "error" | "aborted", errorMessage: string): void => {
    msg.stopReason = reason;
    msg.errorMessage = errorMessage;
    out.push({ type: "error", reason, error: msg });
    out.end(msg);
  };

  const run = async (): Promise<void> => {
    await Promise.resolve();
    let blocks: StreamBlock[];
    try {
      blocks = await produce();
    } catch (err) {
      return end("error", err instanceof Error ? err.message : String(err));
    }
    if (signal?.aborted) return end("aborted", "Request was aborted");
    out.push({ type: "start", partial: msg });
    let outputTokens = 0;
    for (const block of blocks) {
      if (signal?.aborted) return end("aborted", "Request was aborted");
      const index = msg.content.length;
      switch (block.type) {
        case "text":
        case "thinking": {
          const isText = block.type === "text";
          const content: TextContent | ThinkingContent = isText
            ? { type: "text", text: "" }
            : { type: "thinking", thinking: "" };
          msg.content.push(content);
          out.push({ type: isText ? "text_start" : "thinking_start", contentIndex: index, partial: msg });
          for (const delta of chunks(isText ? block.text : block.thinking, size)) {
            if (signal?.aborted) return end("aborted", "Request was aborted");
            if (content.type === "text") content.text += delta;
            else content.thinking += delta;
            outputTokens++;
            out.push({ type: isText ? "text_delta" : "thinking_delta", contentIndex: index, delta, partial: msg });
            await pause();
          }
          if (content.type === "text") {
            out.push({ type: "text_end", contentIndex: index, content: content.text, partial: msg });
          } else {
            if (block.type === "thinking" && block.signature !== undefined) content.thinkingSignature = block.signature;
            out.push({ type: "thinking_end", contentIndex: index, content: content.thinking, partial: msg });
          }
          break;
        }
        case "toolCall": {
          const call: ToolCall = { type: "toolCall", id: block.id, name: block.name, arguments: {} };
          if (block.thoughtSignature !== undefined) call.thoughtSignature = block.thoughtSignature;
          msg.content.push(call);
          out.push({ type: "toolcall_start", contentIndex: index, partial: msg });
          for (const delta of chunks(JSON.stringify(block.arguments), size * 2)) {
            out.push({ type: "toolcall_delta", contentIndex: index, delta, partial: msg });
            await pause();
          }
          call.arguments = block.arguments;
          out.push({ type: "toolcall_end", contentIndex: index, toolCall: call, partial: msg });
          break;
        }
        case "error":
          return end(block.reason ?? "error", block.message);
        case "hook":
          try {
            await block.run(signal);
          } catch (err) {
            return end("error", err instanceof Error ? err.message : String(err));
          }
          break;
      }
    }
    if (signal?.aborted) return end("aborted", "Request was aborted");
    msg.stopReason = msg.content.some((c) => c.type === "toolCall") ? "toolUse" : "stop";
    msg.usage = { ...zeroUsage(), output: outputTokens, totalTokens: outputTokens };
    out.push({ type: "done", reason: msg.stopReason, message: msg });
    out.end(msg);
  };
  void run();
  return out;
}
