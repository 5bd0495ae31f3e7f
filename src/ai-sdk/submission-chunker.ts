import { completedMessageText, MessageView, type AssistantItem } from "../client/message-view.ts";
import type { AssistantMessageCompletedPayload, ConversationRecord, ToolContent } from "../protocol/records.ts";
import { assistantMessageId, type HarnessApprovalData, type HarnessToolOutput, type HarnessUIMessageChunk } from "./ui-message.ts";

/** Options of {@link SubmissionChunker}. */
export interface SubmissionChunkerOptions {
  /**
   * Ends a failed submission's stream with an `error` chunk after its `finish` (so `useChat`
   * reports the error), unless it was cancelled. Default true; history replays pass false.
   */
  errors?: boolean;
}

/** The open assistant message (one model turn) and its open parts. */
interface OpenMessage {
  item: AssistantItem | undefined;
  /** The id of its text part once started, and whether it is still open. */
  textId: string;
  reasoningId: string;
  textOpen: boolean;
  reasoningOpen: boolean;
  /** What its deltas streamed so far (the completed message sends what they did not: folded deltas, ADR 0034). */
  streamedText: string;
  streamedThinking: string;
}

/**
 * One submission's records as the AI SDK's UI message chunks: a `start` with the message id of
 * the submission's reply, a step per model turn (reasoning and text parts streamed delta by
 * delta, the turn's tool calls and their outcomes as `dynamic-tool` parts run by the harness),
 * steers and follow-ups as `steering-message` parts, subagents, compactions, signals, corrective
 * turns, retries (why it waits for its next try) and the settlement as data parts, and `finish`
 * at the settlement.
 *
 * A call that needs a person's approval becomes the AI SDK's own approval states of its
 * `dynamic-tool` part (`approval-requested`, then `approval-responded`, and `output-denied` for a
 * denial or an expiry) and a `data-approval` part with the harness's side of it (its state,
 * expiry and reason), updated in place when decided.
 *
 * A superseded attempt's partial message is taken back with `reset-step` when the new attempt's
 * first record arrives, so its text is never shown twice. Which message is abandoned is decided
 * by a {@link MessageView} fed the same records: the rule of ADR 0020, in one place.
 *
 * Feed it the submission's records in log order, each once; records of other submissions are
 * ignored.
 */
export class SubmissionChunker {
  readonly submissionId: string;
  readonly messageId: string;
  readonly #errors: boolean;
  readonly #view = new MessageView();
  #attempt: string | undefined;
  #message: OpenMessage | undefined;
  /** A step is open, and whether any part was added to it since it started (or was reset). */
  #stepOpen = false;
  #stepEmpty = true;
  readonly #calls = new Set<string>();
  /** Per call that asked approval, the approval as it stands. */
  readonly #approvals = new Map<string, HarnessApprovalData>();
  #settled = false;

  constructor(submissionId: string, options: SubmissionChunkerOptions = {}) {
    this.submissionId = submissionId;
    this.messageId = assistantMessageId(submissionId);
    this.#errors = options.errors ?? true;
  }

  /** The submission's `submission_settled` record was applied. */
  get settled(): boolean {
    return this.#settled;
  }

  /** The chunk that opens the message. */
  start(): HarnessUIMessageChunk[] {
    return [{ type: "start", messageId: this.messageId, messageMetadata: { submissionId: this.submissionId } }];
  }

  /** The chunks one record comes to. */
  apply(record: ConversationRecord): HarnessUIMessageChunk[] {
    if (record.submissionId !== this.submissionId || this.#settled) return [];
    const out: HarnessUIMessageChunk[] = [];
    const changed = record.attemptId !== undefined && this.#attempt !== undefined && record.attemptId !== this.#attempt;
    this.#view.apply(record);
    if (record.attemptId !== undefined) this.#attempt = record.attemptId;
    if (changed && this.#message && this.#abandoned(this.#message.item)) {
      // The earlier attempt's turn is run again: take its partial parts back.
      out.push({ type: "reset-step" });
      this.#message = undefined;
      this.#stepEmpty = true;
    }
    switch (record.kind) {
      case "user_message": {
        const { origin, body } = record.payload;
        if (origin === "steer" || origin === "followUp") this.#part(out, { type: "steering-message", id: record.id, parts: [{ type: "text", text: body }] });
        else if (origin === "correction") this.#part(out, { type: "data-correction", id: record.id, data: { body } });
        return out;
      }
      case "signal":
        this.#part(out, { type: "data-signal", id: record.id, data: record.payload });
        return out;
      case "assistant_message_started":
        this.#open(out, record);
        return out;
      case "assistant_text_delta":
        this.#text(out, this.#message ?? this.#open(out, record), record.payload.text);
        return out;
      case "assistant_thinking_delta":
        this.#thinking(out, this.#message ?? this.#open(out, record), record.payload.text);
        return out;
      case "assistant_message_completed":
        this.#rest(out, record.payload, record);
        this.#closeParts(out);
        return out;
      case "assistant_tool_call":
        this.#toolCall(out, record.payload.callId, record.payload.toolName, record.payload.args);
        return out;
      case "approval_requested": {
        const p = record.payload;
        // The call record comes first; a log without one still gets the part the request needs.
        if (!this.#calls.has(p.callId)) this.#toolCall(out, p.callId, p.toolName, p.args);
        const data: HarnessApprovalData = { state: "pending", approvalId: p.approvalId, expiresAt: p.expiresAt, submissionId: this.submissionId, callId: p.callId, toolName: p.toolName };
        this.#approvals.set(p.callId, data);
        out.push({ type: "tool-approval-request", approvalId: p.approvalId, toolCallId: p.callId });
        this.#part(out, { type: "data-approval", id: p.approvalId, data });
        return out;
      }
      case "approval_decided": {
        const p = record.payload;
        const asked = this.#approvals.get(p.callId);
        if (!asked) return out;
        const data: HarnessApprovalData = { ...asked, state: p.expired ? "expired" : p.approved ? "approved" : "denied" };
        if (p.reason !== undefined) data.reason = p.reason;
        this.#approvals.set(p.callId, data);
        out.push(p.reason === undefined ? { type: "tool-approval-response", approvalId: asked.approvalId, approved: p.approved } : { type: "tool-approval-response", approvalId: asked.approvalId, approved: p.approved, reason: p.reason });
        // Same type and id: the AI SDK updates the pending part in place.
        this.#part(out, { type: "data-approval", id: asked.approvalId, data });
        return out;
      }
      case "tool_outcome": {
        const { callId, isError, content, data } = record.payload;
        if (!this.#calls.has(callId)) return out;
        const approval = this.#approvals.get(callId)?.state;
        if (approval === "denied" || approval === "expired") {
          // Nothing ran: the AI SDK's state for it (the reason is on the approval).
          out.push({ type: "tool-output-denied", toolCallId: callId });
          return out;
        }
        const text = textOf(content);
        if (isError) out.push({ type: "tool-output-error", toolCallId: callId, errorText: text, dynamic: true, providerExecuted: true });
        else {
          const output: HarnessToolOutput = data === undefined ? { text } : { text, data };
          out.push({ type: "tool-output-available", toolCallId: callId, output, dynamic: true, providerExecuted: true });
        }
        return out;
      }
      case "task_spawned":
        this.#part(out, { type: "data-task", id: record.payload.callId, data: record.payload });
        return out;
      case "compaction":
        this.#part(out, { type: "data-compaction", id: record.id, data: { summary: record.payload.summary, reason: record.payload.reason } });
        return out;
      case "submission_retrying":
        // Outside any step: it says why nothing streams, it is not part of a model turn.
        out.push({ type: "data-retrying", id: `retrying-${this.submissionId}`, data: { ...record.payload, submissionId: this.submissionId } });
        return out;
      case "submission_settled": {
        this.#settled = true;
        // A message still streaming stays, ended: it is the submission's last word.
        this.#closeParts(out);
        const payload = record.payload;
        this.#part(out, { type: "data-settlement", id: record.id, data: { ...payload, submissionId: this.submissionId } });
        if (this.#stepOpen) out.push({ type: "finish-step" });
        const cancelled = payload.errorCode === "cancelled" || payload.errorCode === "cancelled_by_parent";
        out.push({
          type: "finish",
          finishReason: payload.status === "succeeded" ? "stop" : cancelled ? "other" : "error",
          messageMetadata: { submissionId: this.submissionId, status: payload.status },
        });
        if (this.#errors && payload.status === "failed" && !cancelled) out.push({ type: "error", errorText: payload.error ?? payload.errorCode ?? "failed" });
        return out;
      }
      default:
        return out;
    }
  }

  /** Opens a message (a model turn) in a step of its own (or the step a reset emptied). */
  #open(out: HarnessUIMessageChunk[], record: ConversationRecord): OpenMessage {
    this.#closeParts(out);
    if (this.#stepOpen && !this.#stepEmpty) out.push({ type: "finish-step" }, { type: "start-step" });
    else if (!this.#stepOpen) out.push({ type: "start-step" });
    this.#stepOpen = true;
    this.#stepEmpty = true;
    const key = record.turnId ?? record.id;
    const item = this.#view.items.findLast(
      (i): i is AssistantItem => i.kind === "assistant" && i.attemptId === record.attemptId && i.turnId === record.turnId,
    );
    this.#message = { item, textId: `text-${key}`, reasoningId: `reasoning-${key}`, textOpen: false, reasoningOpen: false, streamedText: "", streamedThinking: "" };
    return this.#message;
  }

  /**
   * Sends what the completed message holds beyond what its deltas streamed: all of it when they
   * were folded before this replay (ADR 0034), the tail when only the earlier ones were. Text
   * that does not continue what was streamed is left alone (chunks cannot take text back).
   */
  #rest(out: HarnessUIMessageChunk[], payload: AssistantMessageCompletedPayload, record: ConversationRecord): void {
    const completed = completedMessageText(payload);
    if (completed.text === "" && completed.thinking === "") return;
    const message = this.#message ?? this.#open(out, record);
    const thinking = completed.thinking.startsWith(message.streamedThinking) ? completed.thinking.slice(message.streamedThinking.length) : "";
    if (thinking !== "") this.#thinking(out, message, thinking);
    const text = completed.text.startsWith(message.streamedText) ? completed.text.slice(message.streamedText.length) : "";
    if (text !== "") this.#text(out, message, text);
  }

  /** Streams `text` into the message's text part, starting the part first if it is not open. */
  #text(out: HarnessUIMessageChunk[], message: OpenMessage, text: string): void {
    if (!message.textOpen) {
      message.textOpen = true;
      this.#part(out, { type: "text-start", id: message.textId });
    }
    out.push({ type: "text-delta", id: message.textId, delta: text });
    message.streamedText += text;
  }

  /** Streams `thinking` into the message's reasoning part, starting the part first if it is not open. */
  #thinking(out: HarnessUIMessageChunk[], message: OpenMessage, thinking: string): void {
    if (!message.reasoningOpen) {
      message.reasoningOpen = true;
      this.#part(out, { type: "reasoning-start", id: message.reasoningId });
    }
    out.push({ type: "reasoning-delta", id: message.reasoningId, delta: thinking });
    message.streamedThinking += thinking;
  }

  #closeParts(out: HarnessUIMessageChunk[]): void {
    const message = this.#message;
    if (!message) return;
    if (message.reasoningOpen) out.push({ type: "reasoning-end", id: message.reasoningId });
    if (message.textOpen) out.push({ type: "text-end", id: message.textId });
    message.reasoningOpen = message.textOpen = false;
  }

  /** A tool call the harness runs: a `dynamic-tool` part with its input. */
  #toolCall(out: HarnessUIMessageChunk[], callId: string, toolName: string, args: unknown): void {
    this.#calls.add(callId);
    this.#part(out, { type: "tool-input-available", toolCallId: callId, toolName, input: args ?? {}, dynamic: true, providerExecuted: true });
  }

  /** A chunk that adds a part to the current step. */
  #part(out: HarnessUIMessageChunk[], chunk: HarnessUIMessageChunk): void {
    this.#stepEmpty = false;
    out.push(chunk);
  }

  /** The message view dropped it: it never completed, or completed with an error, in an attempt another one superseded. */
  #abandoned(item: AssistantItem | undefined): boolean {
    return item !== undefined && !(item.done && !item.interrupted) && !this.#view.items.includes(item);
  }
}

function textOf(content: ToolContent[] | undefined): string {
  return (content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
}
