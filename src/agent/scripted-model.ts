import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Api, JsonObject, Message, Model, ThinkingLevel } from "@earendil-works/pi-ai";
import { keylessModel, streamBlocks, type StreamBlock } from "./block-stream.ts";

/** What a hook block is told: the call it runs in and the signal the provider got. */
export interface ScriptHookContext {
  /** 0-based index of the provider call. */
  call: number;
  signal: AbortSignal | undefined;
}

/** One block of a scripted answer. */
export type ScriptBlock =
  | { text: string }
  | { thinking: string; signature?: string }
  | { toolCall: { id: string; name: string; arguments: JsonObject; thoughtSignature?: string } }
  /** Ends the answer as a provider error (`stopReason` "error", or "aborted"). */
  | { error: string; reason?: "error" | "aborted" }
  /** Runs at this point of the stream (steer, move a clock, abort, ...); the stream waits for it. */
  | { emit: (ctx: ScriptHookContext) => void | Promise<void> }
  /**
   * Stalls until the provider signal aborts (`"honest"`, then ends as aborted) or forever
   * (`"deaf"`: a provider that ignores abort, to test turn timeouts).
   */
  | { hang: "honest" | "deaf" };

/** One provider call's answer: fixed blocks, or blocks computed from what the provider was sent. */
export type ScriptStep = ScriptBlock[] | ((messages: Message[], call: number) => ScriptBlock[]);

/** What the scripted provider was called with. */
export interface ScriptedCall {
  /** The transcript sent (system messages included). */
  messages: Message[];
  reasoning: ThinkingLevel | undefined;
}

export interface ScriptedModelOptions {
  /** Model id (default "scripted"). */
  id?: string;
  /** Characters per text/thinking delta (default 4). */
  chunkSize?: number;
  /** Timestamp source for messages (default `Date.now`). */
  now?: () => number;
}

/** A deterministic model for tests. */
export interface ScriptedModel {
  model: Model<Api>;
  streamFn: StreamFn;
  /** Every provider call so far, in order. */
  calls: ScriptedCall[];
  /** Steps not yet used. */
  remaining(): number;
}

/**
 * A model that answers provider call N with `steps[N]`, streamed with fixed chunking and the ids
 * given in the script (no randomness). A call past the script ends as a provider error
 * "scripted model: no more steps". The stream honours the abort signal like a real provider.
 */
export function scriptedModel(steps: ScriptStep[], options: ScriptedModelOptions = {}): ScriptedModel {
  const model = keylessModel(options.id ?? "scripted", "scripted");
  const calls: ScriptedCall[] = [];
  let next = 0;
  const streamFn: StreamFn = (m, context, streamOptions) => {
    const call = next++;
    // The loop hands each call a fresh array of messages it no longer mutates: a shallow copy
    // keeps what was sent without paying a deep clone per call.
    const messages = [...context.messages] as Message[];
    calls.push({ messages, reasoning: streamOptions?.reasoning });
    const signal = streamOptions?.signal;
    const produce = (): StreamBlock[] => {
      const step = steps[call];
      if (step === undefined) return [{ type: "error", message: "scripted model: no more steps" }];
      const blocks = typeof step === "function" ? step(messages, call) : step;
      return blocks.map((b) => toStreamBlock(b, call));
    };
    return streamBlocks(m, produce, { signal, chunkSize: options.chunkSize, now: options.now });
  };
  return { model, streamFn, calls, remaining: () => Math.max(0, steps.length - next) };
}

function toStreamBlock(block: ScriptBlock, call: number): StreamBlock {
  if ("text" in block) return { type: "text", text: block.text };
  if ("thinking" in block) return { type: "thinking", thinking: block.thinking, signature: block.signature };
  if ("toolCall" in block) return { type: "toolCall", ...block.toolCall };
  if ("error" in block) return { type: "error", message: block.error, reason: block.reason };
  if ("emit" in block) return { type: "hook", run: (signal) => block.emit({ call, signal }) };
  const deaf = block.hang === "deaf";
  return {
    type: "hook",
    run: (signal) =>
      new Promise<void>((resolve) => {
        if (deaf) return; // never settles: the caller's timeout must cope
        if (signal?.aborted) return resolve();
        signal?.addEventListener("abort", () => resolve(), { once: true });
      }),
  };
}
