/**
 * The basic example's agents as a module, for the serverless shape: `npm run dev:aws` and the
 * `Harness` construct (`agentsEntry`) bind it to `#harness-agents`. One agent, `assistant`, with
 * a per-instance system prompt and the `clock` tool; keyless (a deterministic local model) unless
 * MODEL names a provider (`"provider/model"`, credentials from the function's environment).
 */
import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Api, Message, Model } from "@earendil-works/pi-ai";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { clockTool } from "../../src/agent/clock-tool.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { resolveModel } from "../../src/agent/models.ts";
import { SUMMARY_TRANSCRIPT_OPEN } from "../../src/drive/summarizer.ts";

export const agents: Record<string, AgentDefinition> = {
  assistant: {
    description: "A helpful assistant that can tell the time.",
    // Runs on every claim: per-instance setup (here, the workspace's prompt) is first-class.
    initialize: async ({ instance, env }) => ({
      ...(env("MODEL") ? await resolveModel(env("MODEL"), process.env) : demoModel()),
      systemPrompt: `You are the assistant for workspace "${instance}". Be brief. Use the clock tool when asked about the time.`,
      tools: [clockTool()],
    }),
  },
};

/**
 * The keyless local model; a message containing "slow" streams at a crawl (a character every
 * 250 ms), so a durability walkthrough has time to kill a worker mid-reply.
 */
function demoModel(): { model: Model<Api>; streamFn: StreamFn } {
  // bench/http.ts only: BENCH_STAMP=1 starts each reply, after 20 ms, with its emit time;
  // BENCH_STAMP_GAP_MS paces the deltas as a provider fed by the network would.
  const env = process.env;
  const fast = localModel(env.BENCH_STAMP === "1" ? { stampAfterMs: 20, delayMs: Number(env.BENCH_STAMP_GAP_MS) || 0 } : {});
  const slow = localModel({ delayMs: 250, chunkSize: 1 });
  const streamFn: StreamFn = (m, context, options) =>
    (slowly(lastUserText(context.messages)) ? slow : fast).streamFn(m, context, options);
  return { model: fast.model, streamFn };
}

/**
 * A message asks for a slow reply by saying "slow". A compaction's summary request quotes the
 * conversation, its "slow" included: it is answered at once, or a manual compaction after a slow
 * reply would crawl through the whole summary.
 */
function slowly(text: string): boolean {
  return /slow/i.test(text) && !text.includes(SUMMARY_TRANSCRIPT_OPEN);
}

function lastUserText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    return typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
  }
  return "";
}
