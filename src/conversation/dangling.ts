import type { AssistantToolCallPayload, ConversationRecord, ToolOutcomePayload } from "../protocol/records.ts";

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
 *
 * Calls come from `assistant_tool_call` records and also from the tool-call blocks of stored
 * (replayable) assistant messages: a compaction may keep an `assistant_message_completed` record while
 * cutting off the tool-call records written just before it, and the projected message still
 * needs a result for each of its calls.
 */
export function danglingToolCalls(path: readonly ConversationRecord[]): AssistantToolCallPayload[] {
  const answered = new Set<string>();
  for (const record of path) {
    if (record.kind === "tool_outcome") answered.add(record.payload.callId);
  }
  const dangling: AssistantToolCallPayload[] = [];
  const seen = new Set<string>();
  const report = (call: AssistantToolCallPayload): void => {
    if (answered.has(call.callId) || seen.has(call.callId)) return;
    seen.add(call.callId);
    dangling.push(call);
  };
  for (const record of path) {
    if (record.kind === "assistant_tool_call") report(record.payload);
    else if (record.kind === "assistant_message_completed") {
      for (const call of storedToolCalls(record.payload.message.body)) report(call);
    }
  }
  return dangling;
}

/**
 * The tool-call blocks of a stored assistant message body, as tool-call payloads. None for an
 * error or aborted message: projection never replays it, so its calls need no answer here
 * (its `assistant_tool_call` records are still reported).
 */
function storedToolCalls(body: unknown): AssistantToolCallPayload[] {
  const message = body as { content?: unknown; stopReason?: unknown } | null | undefined;
  if (message?.stopReason === "error" || message?.stopReason === "aborted") return [];
  const content = message?.content;
  if (!Array.isArray(content)) return [];
  const calls: AssistantToolCallPayload[] = [];
  for (const block of content as unknown[]) {
    const b = block as { type?: unknown; id?: unknown; name?: unknown; arguments?: unknown; thoughtSignature?: unknown };
    if (b?.type !== "toolCall" || typeof b.id !== "string" || typeof b.name !== "string") continue;
    calls.push({
      callId: b.id,
      toolName: b.name,
      args: b.arguments,
      ...(typeof b.thoughtSignature === "string" ? { thoughtSignature: b.thoughtSignature } : {}),
    });
  }
  return calls;
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
