import type { AgentMessage } from "@earendil-works/pi-agent-core";
import { contentText } from "@earendil-works/pi-ai";
import { isFailedStop } from "./drive-outcome.ts";

/**
 * True when a transcript ends where the next step is a model call (a user message or tool
 * results); one ending in a completed assistant message means the run had finished.
 */
export function needsModelCall(messages: readonly AgentMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const role = messages[i]!.role;
    if (role === "system") continue;
    return role === "user" || role === "toolResult";
  }
  return false;
}

/** The text of the last assistant message that did not fail ("" when there is none). */
export function lastAssistantText(messages: readonly AgentMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant" && !isFailedStop(m)) return contentText(m.content.filter((c) => c.type === "text"));
  }
  return "";
}
