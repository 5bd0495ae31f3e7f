/**
 * The triage example's agents. Keyless: deterministic models whose answers are pure functions of
 * the transcript (a recovered run asks for the same calls), each behaviour keyed to a word of the
 * ticket so the runbook can show it:
 *
 * - `triage` answers a ticket with a JSON verdict (`{priority, summary, research?}`; the client
 *   asks for it with `resultSchema`, see {@link TRIAGE_SCHEMA}). A ticket saying "urgent" first
 *   gets `"priority": "urgent"`, which the schema does not allow: the harness sends a corrective
 *   turn and the model answers `"high"`. A ticket asking for a "poem" gets verse every time, so
 *   the corrective turns run out (`result_schema_invalid`). A ticket with the word "research"
 *   is first delegated to `researcher` through the `task` tool; the verdict quotes its outcome.
 * - `researcher` answers a prompt with background notes after RESEARCH_MS (1500) of "reading",
 *   long enough to see the parent `waiting` (no lease, no worker) in its submissions listing.
 */
import type { Message } from "@earendil-works/pi-ai";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import type { SubagentPolicy } from "../../src/agent/subagent-policy.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";

export const TRIAGE = "triage";
export const RESEARCHER = "researcher";

/** The verdict a client asks `triage` for (the runbook's `resultSchema`). */
export const TRIAGE_SCHEMA = {
  type: "object",
  required: ["priority", "summary"],
  properties: {
    priority: { enum: ["low", "normal", "high"] },
    summary: { type: "string" },
    research: { type: "string" },
  },
  additionalProperties: false,
} as const;

/** `triage` may spawn `researcher`; `researcher` (a child, depth 1) gets no `task` tool. */
export const subagents: SubagentPolicy = { [TRIAGE]: [RESEARCHER] };

export const agents: Record<string, AgentDefinition> = {
  [TRIAGE]: {
    description: "Triages a support ticket into a priority and a one-line summary.",
    initialize: () => ({
      ...keylessExampleModel("local-triage", triageAnswer),
      systemPrompt:
        "You triage support tickets. Reply with a JSON verdict. When a ticket asks for research, " +
        `delegate it to ${RESEARCHER} with the task tool first and quote what it found.`,
    }),
  },
  [RESEARCHER]: {
    description: "Looks up background for a ticket",
    initialize: ({ env }) => {
      const readMs = Number(env("RESEARCH_MS") || 1500);
      return {
        ...keylessExampleModel("local-researcher", (turn) => researcherAnswer(turn, readMs)),
        systemPrompt: "You look up background for support tickets.",
      };
    },
  },
};

/** How the harness's corrective message starts (src/drive/structured-result.ts). */
const CORRECTION = "Your previous reply did not validate";

function textOf(m: Message): string {
  if (m.role === "user") return typeof m.content === "string" ? m.content : m.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  return "";
}

function triageAnswer(turn: KeylessTurn): StreamBlock[] {
  const { messages } = turn;
  // The ticket: the last user message that is not one of the harness's corrective turns.
  const ticketIndex = messages.findLastIndex((m) => m.role === "user" && !textOf(m).startsWith(CORRECTION));
  const ticket = ticketIndex < 0 ? "" : textOf(messages[ticketIndex]!);
  const after = messages.slice(ticketIndex + 1);
  const corrections = after.filter((m) => m.role === "user").length;
  const research = after.find((m) => m.role === "toolResult" && m.toolName === "task");

  if (/\bresearch\b/i.test(ticket) && research === undefined) {
    return [
      { type: "text", text: "Asking the researcher first." },
      { type: "toolCall", id: `call_research_${ticketIndex}`, name: "task", arguments: { agent: RESEARCHER, prompt: `Find background for this ticket: ${ticket}` } },
    ];
  }
  if (/\bpoem\b/i.test(ticket)) {
    // Never a JSON document: every corrective turn gets verse again.
    return [{ type: "text", text: `Tickets arrive like rain,\nthe queue hums along;\nthis one (${corrections + 1}) I answer in song.` }];
  }
  const urgent = /\burgent\b/i.test(ticket);
  const verdict: Record<string, string> = {
    // "urgent" is not one of the schema's priorities: the first answer does not validate.
    priority: urgent ? (corrections === 0 ? "urgent" : "high") : /\b(down|outage|broken)\b/i.test(ticket) ? "high" : /\b(question|typo)\b/i.test(ticket) ? "low" : "normal",
    summary: ticket.replace(/\s+/g, " ").trim().slice(0, 80),
  };
  if (research !== undefined) verdict.research = resultText(research as Extract<Message, { role: "toolResult" }>);
  return [{ type: "text", text: JSON.stringify(verdict) }];
}

function researcherAnswer(turn: KeylessTurn, readMs: number): StreamBlock[] {
  const topic = turn.userText.replace(/^Find background for this ticket:\s*/, "").replace(/\s+/g, " ").trim().slice(0, 60);
  return [
    // The "reading": one pause, abortable like a provider's request.
    { type: "hook", run: (signal) => pause(readMs, signal) },
    { type: "text", text: `2 earlier tickets match "${topic}"; both were fixed by clearing the export cache.` },
  ];
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}
