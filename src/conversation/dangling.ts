import type { AssistantToolCallPayload, ConversationRecord, ToolOutcomePayload } from "./records.ts";

/**
 * Content of the error outcome synthesized for a tool call whose result was never recorded.
 * Byte-exact: clients and tests match on it.
 */
export const DANGLING_TOOL_CALL_MESSAGE =
  "Tool call was interrupted before a result was recorded (the run was recovered). Re-issue the tool call if it is still needed.";

/**
 * The tool calls on an active path that have no `tool_outcome` with the same call id, in path
 * order (a call id recorded twice is reported once). The session driver synthesizes an error
 * outcome for each before the next input record, so the agent never resumes with an
 * unanswered call. Exempting suspended task calls (a spawned child still running) is the
 * caller's decision: this function reports every unanswered call.
 */
export function danglingToolCalls(path: readonly ConversationRecord[]): AssistantToolCallPayload[] {
  const answered = new Set<string>();
  for (const record of path) {
    if (record.kind === "tool_outcome") answered.add(record.payload.callId);
  }
  const dangling: AssistantToolCallPayload[] = [];
  const seen = new Set<string>();
  for (const record of path) {
    if (record.kind !== "assistant_tool_call") continue;
    const { callId } = record.payload;
    if (answered.has(callId) || seen.has(callId)) continue;
    seen.add(callId);
    dangling.push(record.payload);
  }
  return dangling;
}

/** The payload of the error `tool_outcome` that answers a dangling tool call. */
export function danglingToolOutcome(call: AssistantToolCallPayload): ToolOutcomePayload {
  return {
    callId: call.callId,
    toolName: call.toolName,
    content: [{ type: "text", text: DANGLING_TOOL_CALL_MESSAGE }],
    isError: true,
  };
}
