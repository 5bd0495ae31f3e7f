/**
 * The agents of `npm run bench -- lambda`, keyless, bound to `#harness-agents` in the worker and
 * dlq bundles exactly as a user's module would be:
 *
 * - the soak's `assistant` and `researcher` (`dev/soak/soak-agents.ts`: the basic example's
 *   replies, the clock tool, slow replies, durable subagents), for the memory mix;
 * - `streamer`: asked `stream <n> every <ms> after <ms>`, waits the second figure (a time to first
 *   token), then streams `n` text deltas that far apart, each `@<emit time>;` (epoch ms, taken
 *   as it is pushed), so a client can measure model emit → arrival of every delta;
 * - `dumper`: asked `dump <bytes>`, calls its `dump` tool, which returns that many bytes of text
 *   (a large tool output), then answers with the size it got.
 */
import type { AgentTool, StreamFn } from "@earendil-works/pi-agent-core";
import { type AssistantMessage, createAssistantMessageEventStream, type TextContent } from "@earendil-works/pi-ai";
import type { AgentDefinition } from "../src/agent/agent-definition.ts";
import { emptyAssistantMessage, keylessModel, zeroUsage } from "../src/agent/block-stream.ts";
import { agents as soak, subagents as soakSubagents } from "../dev/soak/soak-agents.ts";
import { keylessExampleModel, resultText } from "../examples/shared/keyless-model.ts";

export const STREAMER = "streamer";
export const DUMPER = "dumper";

/** The body that makes `streamer` wait `afterMs`, then stream `deltas` deltas `everyMs` apart. */
export function streamMessage(deltas: number, everyMs: number, afterMs: number): string {
  return `stream ${deltas} every ${everyMs} after ${afterMs}`;
}

const STREAM = /stream (\d+) every (\d+) after (\d+)/;

/** Emit times (epoch ms) of the deltas in a text: every `@<time>;` in it. */
export function stampsOf(text: string): number[] {
  return [...text.matchAll(/@(\d+(?:\.\d+)?);/g)].map((m) => Number(m[1]));
}

const streamerModel = keylessModel("bench-streamer", "local");

/** The streamer's model: one text block, delta by delta, each stamped as it is pushed. */
const streamerFn: StreamFn = (model, context, options) => {
  const out = createAssistantMessageEventStream();
  const signal = options?.signal;
  const last = [...context.messages].reverse().find((m) => m.role === "user");
  const text = last === undefined ? "" : typeof last.content === "string" ? last.content : last.content.map((b) => (b.type === "text" ? b.text : "")).join("");
  const [, n, every, after] = STREAM.exec(text) ?? [, "1", "0", "0"];
  const msg: AssistantMessage = emptyAssistantMessage(model, Date.now(), "pending");
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  void (async () => {
    await sleep(Number(after));
    out.push({ type: "start", partial: msg });
    const content: TextContent = { type: "text", text: "" };
    msg.content.push(content);
    out.push({ type: "text_start", contentIndex: 0, partial: msg });
    for (let i = 0; i < Number(n); i++) {
      if (signal?.aborted) break;
      if (i > 0) await sleep(Number(every));
      const delta = `@${(performance.timeOrigin + performance.now()).toFixed(1)};`;
      content.text += delta;
      out.push({ type: "text_delta", contentIndex: 0, delta, partial: msg });
    }
    out.push({ type: "text_end", contentIndex: 0, content: content.text, partial: msg });
    msg.stopReason = signal?.aborted ? "aborted" : "stop";
    msg.usage = { ...zeroUsage(), output: Number(n), totalTokens: Number(n) };
    if (signal?.aborted) {
      out.push({ type: "error", reason: "aborted", error: msg });
    } else {
      out.push({ type: "done", reason: "stop", message: msg });
    }
    out.end(msg);
  })();
  return out;
};

const dumpParameters = { type: "object", properties: { bytes: { type: "number" } }, required: ["bytes"] } as const;

/** Returns `bytes` bytes of text: a large tool output. */
const dumpTool: AgentTool<typeof dumpParameters> = {
  name: "dump",
  label: "Dump",
  description: "Returns that many bytes of text.",
  parameters: dumpParameters,
  async execute(_id, params) {
    const { bytes } = params as { bytes: number };
    const line = "the quick brown fox jumps over the lazy dog, again and again. ";
    const text = line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
    return { content: [{ type: "text", text }], details: {} };
  },
};

export const agents: Record<string, AgentDefinition> = {
  ...soak,
  [STREAMER]: {
    description: "Streams stamped deltas at a given pace.",
    initialize: () => ({ model: streamerModel, streamFn: streamerFn, systemPrompt: "You stream." }),
  },
  [DUMPER]: {
    description: "Calls a tool with a large output.",
    initialize: () => ({
      ...withContextWindow(1_000_000, keylessExampleModel("bench-dumper", (turn) => {
        const got = turn.results.find((r) => r.toolName === "dump");
        if (got) return [{ type: "text", text: `Got ${resultText(got).length} bytes.` }];
        const bytes = Number(/dump (\d+)/.exec(turn.userText)?.[1] ?? 1024);
        return [{ type: "toolCall", id: `call_dump_${turn.userIndex}`, name: "dump", arguments: { bytes } }];
      })),
      systemPrompt: "You dump.",
      tools: [dumpTool],
    }),
  },
};

export const subagents = soakSubagents;

/** A keyless model with a context window of `tokens` (a 2 MB tool output is ~500k tokens: a 1M-token model's). */
function withContextWindow<T extends { model: ReturnType<typeof keylessModel> }>(tokens: number, m: T): T {
  return { ...m, model: { ...m.model, contextWindow: tokens } };
}
