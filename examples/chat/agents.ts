/**
 * The chat example's agent: `chat`, keyless. Its deterministic model streams its replies slowly
 * enough to watch, and calls the slow `research` tool when asked to research something:
 *
 *   research <topic>   → research({topic}), then a summary of the findings
 *   show me markdown   → a reply with the markdown the page renders (emphasis, a list, a link,
 *                         a code block)
 *   anything else      → "Noted: <your words>" (a steer sent during the research lands here:
 *                         the run answers the steer instead of summarizing)
 *
 * A real model (see the basic example's MODEL) would decide by itself; the page is the same.
 */
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";
import { researchTool } from "./research-tool.ts";

export const CHAT = "chat";

export interface ChatAgentOptions {
  /** How long one `research` call takes (ms). */
  researchMs: number;
  /** Pause between streamed deltas (ms). */
  deltaDelayMs: number;
}

export function chatAgents(options: ChatAgentOptions): Record<string, AgentDefinition> {
  return {
    [CHAT]: {
      description: "Chats, and researches a topic on request (slowly, so it can be steered).",
      initialize: () => ({
        ...keylessExampleModel("local-chat", answer, { delayMs: options.deltaDelayMs, chunkSize: 3 }),
        systemPrompt: "You are a helpful research assistant. Use the research tool when asked to research something.",
        tools: [researchTool(options.researchMs)],
      }),
    },
  };
}

/** What "show me markdown" answers: the page renders it (and a model's raw HTML stays text). */
export const MARKDOWN_SAMPLE = [
  "Here is what the page renders:",
  "",
  "- **bold** and *italic* text, `inline code`",
  "- a [link](https://example.com/docs) that opens in a new tab",
  "",
  "```ts",
  "const harness = createClient({ baseUrl: \"http://127.0.0.1:8485\" });",
  "await harness.dispatchAndWait(\"chat\", \"demo\", { kind: \"user\", body: \"hi\" });",
  "```",
].join("\n");

function answer(turn: KeylessTurn): StreamBlock[] {
  if (/^\s*show me markdown\s*$/i.test(turn.userText)) return [{ type: "text", text: MARKDOWN_SAMPLE }];
  const asked = /^\s*research\s+(.+)$/is.exec(turn.userText);
  const topic = asked?.[1]?.trim();
  if (topic === undefined) return [{ type: "text", text: `Noted: ${turn.userText.trim()}` }];
  const result = turn.results[0];
  if (result === undefined) {
    return [
      { type: "text", text: `Let me look into ${topic}.` },
      { type: "toolCall", id: `research_${turn.userIndex}`, name: "research", arguments: { topic } },
    ];
  }
  if (result.isError) return [{ type: "text", text: `The research on ${topic} did not finish.` }];
  return [{ type: "text", text: `Here is what I found about ${topic}:\n${resultText(result)}` }];
}
