/**
 * The coder's agent: `coder`, with read/write/edit/bash rooted at one workspace. Keyless: a
 * deterministic model that runs the tool calls the message spells out, in order, then sums up:
 *
 *   $ <command line>                                   → bash
 *   {"tool":"write","path":"notes.md","content":"hi"}  → one call (read, write, edit, bash)
 *   [{"tool":"write",…}, {"tool":"edit",…}, …]         → several, one after another
 *
 * Anything else gets a short help text. A real model (see the basic example's MODEL) would choose
 * the calls itself; the tools are the same.
 */
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";
import { bashTool } from "./bash-tool.ts";
import { editTool, readTool, writeTool } from "./file-tools.ts";

export const CODER = "coder";
const TOOL_NAMES = ["read", "write", "edit", "bash"];

/** The coder agent over the workspace folder `root` (which must exist). */
export function coderAgents(root: string): Record<string, AgentDefinition> {
  return {
    [CODER]: {
      description: "Reads, writes and edits files and runs commands in one workspace.",
      initialize: () => ({
        ...keylessExampleModel("local-coder", answer),
        systemPrompt: `You are a coding agent. Your workspace is ${root}; every file tool path is relative to it.`,
        tools: [readTool(root), writeTool(root), editTool(root), bashTool(root)],
      }),
    },
  };
}

interface PlannedCall {
  tool: string;
  args: Record<string, unknown>;
}

function answer(turn: KeylessTurn): StreamBlock[] {
  const calls = plannedCalls(turn.userText);
  if (calls === undefined) {
    return [{ type: "text", text: 'Tell me what to run: "$ <command>", or JSON such as {"tool":"write","path":"notes.md","content":"hi"}.' }];
  }
  const done = turn.results;
  const failed = done.at(-1)?.isError === true;
  if (done.length < calls.length && !failed) {
    const next = calls[done.length]!;
    return [{ type: "toolCall", id: `call_${turn.userIndex}_${done.length}`, name: next.tool, arguments: next.args as never }];
  }
  const lines = done.map((r) => `${r.toolName}${r.isError ? " failed" : ""}: ${resultText(r).trim().split("\n").at(-1) ?? ""}`);
  if (failed && done.length < calls.length) lines.push(`stopped: ${calls.length - done.length} call(s) not run`);
  return [{ type: "text", text: lines.join("\n") }];
}

function plannedCalls(text: string): PlannedCall[] | undefined {
  const trimmed = text.trim();
  if (trimmed.startsWith("$ ")) return [{ tool: "bash", args: { command: trimmed.slice(2) } }];
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  const list = Array.isArray(json) ? json : [json];
  const calls: PlannedCall[] = [];
  for (const item of list) {
    if (item === null || typeof item !== "object") return undefined;
    const { tool, ...args } = item as Record<string, unknown>;
    if (typeof tool !== "string" || !TOOL_NAMES.includes(tool)) return undefined;
    calls.push({ tool, args });
  }
  return calls.length > 0 ? calls : undefined;
}
