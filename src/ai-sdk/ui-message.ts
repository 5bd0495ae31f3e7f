import type { InferUIMessageChunk, UIMessage } from "ai";
import type { RetryState, ToolApproval } from "../client/message-view.ts";
import type { SettledPayload, SettledStatus, SignalPayload, TaskSpawnedPayload } from "../protocol/records.ts";

/** What the harness puts in a message's `metadata`. */
export interface HarnessMessageMetadata {
  /** The submission the message belongs to (a user message's is the one it dispatched). */
  submissionId?: string;
  /** On an assistant message, once its submission settled. */
  status?: SettledStatus;
}

/** A submission's settlement (`data-settlement`): its outcome, with the usage, cost and structured result. */
export type HarnessSettlementData = SettledPayload & { submissionId: string };

/** A tool's output in a `dynamic-tool` part: the text the model saw and the tool's structured details. */
export interface HarnessToolOutput {
  text: string;
  data?: unknown;
}

/**
 * A tool call that needs a person's approval (`data-approval`, one part per call, its id the
 * `approvalId`, updated in place when decided): `pending` until someone decides it with
 * `HarnessChatTransport.approve` / `deny`, or its `expiresAt` passes (`expired`, denied).
 */
export type HarnessApprovalData = ToolApproval & {
  submissionId: string;
  callId: string;
  toolName: string;
};

/**
 * The harness's records that become data parts of an assistant message (`data-<name>`):
 * `settlement` (the submission's outcome), `task` (a subagent spawned by a `task` call),
 * `compaction` (the history was summarized), `signal` (the signal a submission answers),
 * `correction` (a corrective turn asked for a valid structured result), `approval` (a call
 * waiting for, or decided by, a person), `retrying` (the submission waits for its next try after a
 * failed one, and why: one part per submission, updated in place at each retry, ADR 0053; a
 * message whose `metadata.status` is set has finished since).
 */
export type HarnessDataParts = {
  settlement: HarnessSettlementData;
  task: TaskSpawnedPayload;
  compaction: { summary: string; reason?: "threshold" | "overflow" | "manual" };
  signal: SignalPayload;
  correction: { body: string };
  approval: HarnessApprovalData;
  retrying: RetryState;
};

/**
 * A UI message of a harness conversation, for the AI SDK's `useChat`. User messages carry the
 * dispatched text; an assistant message is one submission's reply: a step per model turn with
 * its reasoning, text and tools (`dynamic-tool` parts, executed by the harness), steers and
 * follow-ups as `steering-message` parts, and the records above as data parts.
 */
export type HarnessUIMessage = UIMessage<HarnessMessageMetadata, HarnessDataParts>;

/** A chunk of a {@link HarnessUIMessage} stream. */
export type HarnessUIMessageChunk = InferUIMessageChunk<HarnessUIMessage>;

/** The id of a submission's assistant message (a user message's id is its submission's id). */
export function assistantMessageId(submissionId: string): string {
  return `assistant:${submissionId}`;
}
