import type { AgentEvent, AgentToolResult } from "@earendil-works/pi-agent-core";
import type { AssistantMessage } from "@earendil-works/pi-ai";
import type { RecordBody, RecordPayloads } from "../protocol/records.ts";
import type { Correlation, HarnessEvent } from "../ports/observer.ts";
import type { DeltaKind } from "./delta-batcher.ts";
import { isFailedStop } from "./drive-outcome.ts";

/** Where an event happens: the current turn as the drive tracks it. */
export interface TurnView {
  /** The turn's correlation (with its `turnId` inside a turn). */
  correlation: Correlation;
  /** The turn's number within the submission (1-based). */
  turn: number;
  /** The model's id, for `assistant_message_started`. */
  modelId: string;
}

/** What one pi agent event comes to. */
export interface EventEffects {
  /** Observer events to report at once. */
  observe: HarnessEvent[];
  /** A model delta for the batcher (the hot path: most deltas write nothing yet). */
  delta?: { kind: DeltaKind; text: string };
  /** Records to append after the pending deltas; `[]` only flushes the deltas. */
  records?: RecordBody[];
  /** Observer events to report once `records` are durable. */
  observeAfter?: HarnessEvent[];
  /** The assistant message that just ended (the operation is classified by the last one). */
  assistantEnded?: AssistantMessage;
}

const NOTHING: EventEffects = Object.freeze({ observe: [] }) as EventEffects;

/**
 * Maps a pi agent event to records and observer events, purely: the drive stamps, batches and
 * writes the records (pi awaits its listeners, so a write is the durability barrier) and reports
 * the events. A `turn_start` expects `view` to describe the new turn already.
 */
export function agentEventEffects(event: AgentEvent, view: TurnView): EventEffects {
  const { correlation } = view;
  switch (event.type) {
    case "turn_start":
      return { observe: [{ type: "turn_started", correlation, turn: view.turn }] };
    case "turn_end":
      return { observe: [{ type: "turn_ended", correlation, turn: view.turn }] };
    case "message_start":
      if (event.message.role !== "assistant") return NOTHING;
      return { observe: [], records: [{ kind: "assistant_message_started", payload: { model: view.modelId, messageType: "message" } }] };
    case "message_update": {
      const e = event.assistantMessageEvent;
      if (e.type !== "text_delta" && e.type !== "thinking_delta") return NOTHING;
      const kind = e.type === "text_delta" ? "assistant_text_delta" : "assistant_thinking_delta";
      return { observe: [{ type: "delta", correlation, kind, text: e.delta }], delta: { kind, text: e.delta } };
    }
    case "message_end":
      // A message end always flushes pending deltas.
      if (event.message.role !== "assistant") return { observe: [], records: [] };
      return { observe: [modelResponse(event.message, correlation)], records: assistantEndRecords(event.message), assistantEnded: event.message };
    case "tool_execution_start":
      return { observe: [{ type: "tool_call_started", correlation, callId: event.toolCallId, toolName: event.toolName }] };
    case "tool_execution_update":
      return {
        observe: [
          { type: "tool_call_updated", correlation, callId: event.toolCallId, toolName: event.toolName, result: event.partialResult },
        ],
      };
    case "tool_execution_end":
      return {
        observe: [],
        records: [toolOutcomeRecord(event)],
        observeAfter: [{ type: "tool_call_ended", correlation, callId: event.toolCallId, toolName: event.toolName, isError: event.isError }],
      };
    default:
      return NOTHING;
  }
}

/** The observer event of an assistant message end. */
function modelResponse(message: AssistantMessage, correlation: Correlation): HarnessEvent {
  const { input, output, cacheRead, cacheWrite, totalTokens, reasoning } = message.usage;
  const event: Extract<HarnessEvent, { type: "model_response" }> = {
    type: "model_response",
    correlation,
    provider: message.provider,
    model: message.model,
    stopReason: message.stopReason,
    usage: { input, output, cacheRead, cacheWrite, totalTokens },
    startedAt: message.timestamp,
  };
  if (reasoning !== undefined) event.usage.reasoning = reasoning;
  if (message.responseModel !== undefined) event.responseModel = message.responseModel;
  if (message.responseId !== undefined) event.responseId = message.responseId;
  if (message.errorMessage !== undefined) event.error = message.errorMessage;
  if (message.durationMs !== undefined) event.durationMs = message.durationMs;
  return event;
}

/** The records of an assistant message end: its tool calls (unless it failed), then the message. */
function assistantEndRecords(message: AssistantMessage): RecordBody[] {
  const records: RecordBody[] = [];
  if (!isFailedStop(message)) {
    for (const block of message.content) {
      if (block.type !== "toolCall") continue;
      const payload: RecordPayloads["assistant_tool_call"] = { callId: block.id, toolName: block.name, args: block.arguments };
      if (block.thoughtSignature !== undefined) payload.thoughtSignature = block.thoughtSignature;
      records.push({ kind: "assistant_tool_call", payload });
    }
  }
  records.push({ kind: "assistant_message_completed", payload: { message: { role: "assistant", type: "message", body: message } } });
  return records;
}

function toolOutcomeRecord(event: Extract<AgentEvent, { type: "tool_execution_end" }>): RecordBody {
  const result = (event.result ?? {}) as Partial<AgentToolResult<unknown>>;
  const payload: RecordPayloads["tool_outcome"] = {
    callId: event.toolCallId,
    toolName: event.toolName,
    content: (result.content ?? []) as RecordPayloads["tool_outcome"]["content"],
    isError: event.isError,
  };
  if (result.details !== undefined) payload.data = result.details;
  return { kind: "tool_outcome", payload };
}
