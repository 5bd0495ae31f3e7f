/**
 * The soak's agents, in both shapes (the embedded soak server, `soak-server.ts`, and the local
 * cloud's `agentsModule`): the basic example's `assistant` (short replies, the clock tool, slow
 * replies), which may also delegate to `researcher` through the durable `task` tool.
 *
 * Keyless only (MODEL unset) and deterministic (a recovered run asks for the same calls): a message
 * `research <n> for <ms> ms <tag>` makes the assistant call `task` n times in one turn (parallel
 * children), then, once every child's outcome is back, answer with what they found. A child
 * "reads" for `<ms>` ms (abortable, like a provider's request) before answering, long enough for
 * a crash to land while its parent waits and it runs.
 */
import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import type { SubagentPolicy } from "../../src/agent/subagent-policy.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { SUMMARY_TRANSCRIPT_OPEN } from "../../src/drive/summarizer.ts";
import { TASK_TOOL_NAME } from "../../src/drive/task-tool.ts";
import { agents as basic } from "../../examples/basic/agents.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../../examples/shared/keyless-model.ts";

export const ASSISTANT = "assistant";
export const RESEARCHER = "researcher";

/** The body of a submission that delegates to `children` researchers reading `readMs` each. */
export function researchMessage(children: number, readMs: number, tag: string): string {
  return `research ${children} for ${readMs} ms ${tag}`;
}

const RESEARCH = /^research (\d+) for (\d+) ms (.*)$/;

/** `assistant` may spawn `researcher`; `researcher` (a child, depth 1) gets no `task` tool. */
export const subagents: SubagentPolicy = { [ASSISTANT]: [RESEARCHER] };

export const agents: Record<string, AgentDefinition> = {
  [ASSISTANT]: {
    description: basic.assistant!.description,
    initialize: async (context) => {
      const setup = await basic.assistant!.initialize(context);
      const delegating = keylessExampleModel("local-delegating", delegate);
      const summarizing = localModel();
      const plain = setup.streamFn!;
      // A summary goes to the fast local model: the basic model would stream it at a crawl when
      // the transcript mentions "slow" (minutes, with research notes in it). Anything else sees
      // only its input, without a summary merged into the same user message (projection merges
      // adjacent user messages), so a slow echo stays short and a research request is recognized
      // after a compaction; a research request goes to the delegating model, the rest to the
      // basic example's model.
      const streamFn: StreamFn = (model, ctx, options) => {
        if (lastUserText(ctx.messages).includes(SUMMARY_TRANSCRIPT_OPEN)) return summarizing.streamFn(model, ctx, options);
        const input = inputOnly(ctx);
        return (RESEARCH.test(lastUserText(input.messages)) ? delegating.streamFn : plain)(model, input, options);
      };
      return { ...setup, streamFn };
    },
  },
  [RESEARCHER]: {
    description: "Looks up background for a question",
    initialize: () => ({
      ...keylessExampleModel("local-researcher", research),
      systemPrompt: "You look up background.",
    }),
  },
};

/** The assistant on a research request: n parallel `task` calls, then a summary of their outcomes. */
function delegate(turn: KeylessTurn): StreamBlock[] {
  const [, n, ms, tag] = RESEARCH.exec(turn.userText)!;
  const outcomes = turn.results.filter((r) => r.toolName === TASK_TOOL_NAME);
  if (outcomes.length === 0) {
    // Call ids derive from the transcript position: a recovered run asks for the same children.
    return Array.from({ length: Number(n) }, (_, k): StreamBlock => ({
      type: "toolCall",
      id: `call_research_${turn.userIndex}_${k}`,
      name: TASK_TOOL_NAME,
      arguments: { agent: RESEARCHER, prompt: `topic ${k} of ${tag}: read for ${ms} ms` },
    }));
  }
  return [{ type: "text", text: `Found ${outcomes.length}: ${outcomes.map((r) => (r.isError ? "(failed)" : resultText(r).slice(0, 40))).join("; ")}` }];
}

/** The researcher: reads for the asked time, then answers. */
function research(turn: KeylessTurn): StreamBlock[] {
  const ms = Number(/read for (\d+) ms/.exec(turn.userText)?.[1] ?? 0);
  const topic = turn.userText.replace(/: read for.*$/, "");
  return [
    { type: "hook", run: (signal) => pause(ms, signal) },
    { type: "text", text: `Notes on ${topic}: nothing unusual.` },
  ];
}

type Context = Parameters<StreamFn>[1];

/** `ctx` with the last user message cut down to its last text block (the input, not a summary before it). */
function inputOnly(ctx: Context): Context {
  const i = ctx.messages.findLastIndex((m) => m.role === "user");
  const user = ctx.messages[i];
  if (user?.role !== "user" || typeof user.content === "string") return ctx;
  const last = user.content.findLast((b) => b.type === "text");
  if (last === undefined || user.content.length === 1) return ctx;
  const messages = [...ctx.messages];
  messages[i] = { ...user, content: [last] };
  return { ...ctx, messages };
}

function lastUserText(messages: Context["messages"]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    return typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
  }
  return "";
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}
