import type { StreamFn } from "@earendil-works/pi-agent-core";
import { contentText, getSystemMessageText, type Api, type Message, type Model, type ToolResultMessage } from "@earendil-works/pi-ai";
import { keylessModel, streamBlocks, type StreamBlock } from "../../src/agent/block-stream.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { SUMMARY_TRANSCRIPT_OPEN } from "../../src/drive/summarizer.ts";

export type { StreamBlock } from "../../src/agent/block-stream.ts";

/** What an example's keyless model looks at to answer: the turn so far. */
export interface KeylessTurn {
  /** The system prompt the agent's initializer returned ("" when none). */
  systemPrompt: string;
  /** Index of the last user-side message (a dispatched message, a steer, a signal) in `messages`. */
  userIndex: number;
  /** Its text (a signal's is the JSON of `{type, body, sender?, tag?}`). */
  userText: string;
  /** Tool results that came after it, in order. */
  results: ToolResultMessage[];
  /** The whole transcript the model was given (for answers that look further back). */
  messages: readonly Message[];
}

export interface KeylessOptions {
  /** Pause between deltas in ms (default 0). */
  delayMs?: number;
  /** Characters per delta (default 4). */
  chunkSize?: number;
}

/**
 * A deterministic keyless model for an example: `answer` decides the blocks (text, tool calls)
 * from the turn so far, and they stream like a provider's reply. Answers must derive tool call
 * ids from the transcript (e.g. `userIndex`), so a recovered run asks for the same call. A
 * compaction's summary request (the harness asks the agent's own model) is answered by
 * `localModel`'s keyless summary, so a compaction shows a summary, not the example's echo of
 * the request.
 */
export function keylessExampleModel(
  id: string,
  answer: (turn: KeylessTurn) => StreamBlock[] | Promise<StreamBlock[]>,
  options: KeylessOptions = {},
): { model: Model<Api>; streamFn: StreamFn } {
  const model = keylessModel(id, "local");
  const summarizer = localModel({ chunkSize: 64 });
  const streamFn: StreamFn = (m, context, streamOptions) => {
    const turn = turnOf(context.messages);
    if (turn.userText.includes(SUMMARY_TRANSCRIPT_OPEN)) return summarizer.streamFn(m, context, streamOptions);
    return streamBlocks(m, () => answer(turn), {
      signal: streamOptions?.signal,
      chunkSize: options.chunkSize,
      delayMs: options.delayMs,
    });
  };
  return { model, streamFn };
}

function turnOf(messages: readonly Message[]): KeylessTurn {
  const system = messages.find((m) => m.role === "system");
  const systemPrompt = system?.role === "system" ? getSystemMessageText(system) : "";
  let userIndex = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      userIndex = i;
      break;
    }
  }
  const user = userIndex < 0 ? undefined : (messages[userIndex] as Extract<Message, { role: "user" }>);
  const userText = user === undefined ? "" : typeof user.content === "string" ? user.content : contentText(user.content);
  const results = messages.slice(userIndex + 1).filter((m): m is ToolResultMessage => m.role === "toolResult");
  return { systemPrompt, userIndex, userText, results, messages };
}

/** The text of a tool result. */
export function resultText(result: ToolResultMessage): string {
  return contentText(result.content);
}
