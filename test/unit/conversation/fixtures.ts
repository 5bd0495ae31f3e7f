import fc from "fast-check";
import {
  RECORD_KINDS,
  type ConversationRecord,
  type RecordKind,
  type RecordPayloads,
} from "../../../src/protocol/records.ts";

/** A record with a fixed envelope, for tests that care only about kind, id and payload. */
export function rec<K extends RecordKind>(id: string, kind: K, payload: RecordPayloads[K], time?: string): ConversationRecord {
  return {
    id,
    kind,
    conversationId: "conv-1",
    session: "agent/instance/session",
    time: time ?? "2026-01-01T00:00:00.000Z",
    payload,
  } as ConversationRecord;
}

/** Sequential, sortable record ids: r0000, r0001, ... */
export const idAt = (i: number): string => `r${String(i).padStart(4, "0")}`;

/** How a generated compaction points at its kept entry. */
export type KeptPointer =
  | { type: "none" }
  | { type: "empty" }
  | { type: "unknown" }
  /** An earlier record, as a fraction of the records so far. */
  | { type: "earlier"; at: number }
  /** A record that appears later in the log (not yet seen when the compaction is reduced). */
  | { type: "later"; ahead: number };

const keptPointer: fc.Arbitrary<KeptPointer> = fc.oneof(
  { arbitrary: fc.constant<KeptPointer>({ type: "none" }), weight: 1 },
  { arbitrary: fc.constant<KeptPointer>({ type: "empty" }), weight: 1 },
  { arbitrary: fc.constant<KeptPointer>({ type: "unknown" }), weight: 1 },
  { arbitrary: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }).map<KeptPointer>((at) => ({ type: "earlier", at })), weight: 5 },
  { arbitrary: fc.integer({ min: 1, max: 5 }).map<KeptPointer>((ahead) => ({ type: "later", ahead })), weight: 1 },
);

/** One generated step: a record kind, plus a kept pointer used when the kind is compaction. */
export interface Step {
  kind: RecordKind;
  kept: KeptPointer;
}

export const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom(...RECORD_KINDS),
  kept: keptPointer,
});

/** A payload for each kind; compaction pointers resolved against record position `i`. */
function payloadFor(step: Step, i: number, total: number): RecordPayloads[RecordKind] {
  switch (step.kind) {
    case "conversation_created":
      return { agent: "a", instance: "i", session: "s" };
    case "user_message":
      return { body: `user ${i}` };
    case "signal":
      return { type: "comment", body: `signal ${i}` };
    case "assistant_message_started":
      return { model: "m", messageType: "message" };
    case "assistant_text_delta":
    case "assistant_thinking_delta":
      return { text: `t${i}` };
    case "assistant_tool_call":
      return { callId: `c${i}`, toolName: "tool" };
    case "tool_outcome":
      return { callId: `c${i}`, toolName: "tool" };
    case "assistant_message_completed":
      return { message: { role: "assistant", type: "message" } };
    case "submission_settled":
      return { status: "succeeded" };
    case "task_spawned":
      return {
        callId: `c${i}`,
        agent: "a",
        childInstance: "ci",
        childConversationId: "cc",
        childSubmissionId: "cs",
        prompt: "p",
      };
    case "approval_requested":
      return { callId: `c${i}`, toolName: "tool", approvalId: `s/c${i}`, expiresAt: "2026-01-02T00:00:00.000Z" };
    case "approval_decided":
      return { callId: `c${i}`, approved: i % 2 === 0 };
    case "callback_started":
      return { callId: `c${i}`, toolName: "tool", expiresAt: "2026-01-02T00:00:00.000Z", callbackDigest: "d" };
    case "tool_started":
      return { callId: `c${i}`, toolName: "tool" };
    case "submission_retrying":
      return { reason: "unreachable", error: `e${i}`, nextAttemptAt: "2026-01-01T00:00:01.000Z", attemptCount: 1, maxAttempts: 10 };
    case "compaction": {
      const k = step.kept;
      const base = { summary: `summary ${i}`, startIdx: 0, endIdx: i };
      switch (k.type) {
        case "none":
          return base;
        case "empty":
          return { ...base, firstKeptEntryId: "" };
        case "unknown":
          return { ...base, firstKeptEntryId: "no-such-record" };
        case "earlier":
          return i === 0 ? base : { ...base, firstKeptEntryId: idAt(Math.floor(k.at * i)) };
        case "later":
          return { ...base, firstKeptEntryId: idAt(Math.min(i + k.ahead, total)) };
      }
    }
  }
}

/** Turns generated steps into a log with unique, increasing ids. */
export function buildLog(steps: readonly Step[]): ConversationRecord[] {
  return steps.map((step, i) => rec(idAt(i), step.kind, payloadFor(step, i, steps.length)));
}

export const logArb: fc.Arbitrary<ConversationRecord[]> = fc
  .array(stepArb, { maxLength: 80 })
  .map(buildLog);
