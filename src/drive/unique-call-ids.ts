import type { AssistantMessage } from "@earendil-works/pi-ai";
import type { ConversationRecord } from "../protocol/records.ts";

/**
 * Longest call id the harness makes up: OpenAI's Chat Completions cuts ids at 40 characters when
 * pi-ai replays a transcript, so a longer renamed id could meet its original again there.
 */
const MAX_RENAMED_CHARS = 40;

/**
 * The call ids the drive's records already use: every `assistant_tool_call` it knows (the log from
 * its checkpoint on, which holds the transcript's calls, and the submission's own earlier records).
 */
export function usedCallIds(records: readonly ConversationRecord[]): Set<string> {
  const used = new Set<string>();
  for (const r of records) if (r.kind === "assistant_tool_call") used.add(r.payload.callId);
  return used;
}

/**
 * Gives every tool call of `message` an id no earlier call used, in place, before the message is
 * recorded or its calls run. Some providers (OpenAI-compatible local servers among them) repeat
 * call ids across turns (`call_0` every turn); the log keys a call's outcome, its dangling repair,
 * its wait and its `task` child's names by the id, so a repeat would make a later call look
 * answered by an earlier one's outcome or find the earlier call's child. A repeated id (against
 * `used` or an earlier call of the same message) becomes `<id>_<n>` (n = 2, 3, … the first one
 * free; the id cut so the whole stays within 40 characters). The renamed id is what the log
 * records and what the transcript sends back, so a replay reads it as it was; ids the provider
 * made unique are left alone. Returns the renames (old → new), in call order.
 */
export function renameRepeatedCallIds(message: AssistantMessage, used: ReadonlySet<string>): Array<{ from: string; to: string }> {
  const taken = new Set(used);
  const renames: Array<{ from: string; to: string }> = [];
  for (const block of message.content) {
    if (block.type !== "toolCall") continue;
    if (!taken.has(block.id)) {
      taken.add(block.id);
      continue;
    }
    const from = block.id;
    let to = from;
    for (let n = 2; taken.has(to); n++) {
      const suffix = `_${n}`;
      to = `${from.slice(0, Math.max(1, MAX_RENAMED_CHARS - suffix.length))}${suffix}`;
    }
    block.id = to;
    taken.add(to);
    renames.push({ from, to });
  }
  return renames;
}
