import type {
  AssistantMessageCompletedPayload,
  AttachmentRef,
  ConversationRecord,
  SettledErrorCode,
  SettledStatus,
  SettledUsage,
  SubmissionRetryingPayload,
} from "../protocol/records.ts";

// Only type imports: the chat example serves this file to the browser with its types stripped.

/** A user-side message: a dispatched, steered or followed-up message, or a signal. */
export interface UserItem {
  kind: "user";
  text: string;
  /** `steer`, `followUp`, `correction`, or `signal <type>`; absent for a dispatched message. */
  origin?: string;
  submissionId?: string;
  /** The id of its `user_message` (or `signal`) record: where an edit forks from. */
  recordId: string;
  /** The attachments it carried. */
  attachments?: AttachmentRef[];
}

/** An assistant message as streamed so far. */
export interface AssistantItem {
  kind: "assistant";
  text: string;
  thinking: string;
  /** Its `assistant_message_completed` record arrived. */
  done: boolean;
  /**
   * It completed with an error or aborted, or its submission settled before it completed: shown
   * until a later attempt of the submission supersedes it.
   */
  interrupted: boolean;
  submissionId?: string;
  attemptId?: string;
  turnId?: string;
}

/**
 * A call of a tool that needs approval (ADR 0025): asked (`approval_requested`), then decided by a
 * person or by its expiry (`approval_decided`).
 */
export interface ToolApproval {
  /** `pending` until decided; `expired` when nobody decided in time (the call was denied). */
  state: "pending" | "approved" | "denied" | "expired";
  /** `<submissionId>/<callId>`. */
  approvalId: string;
  /** RFC 3339 time after which an undecided call is denied. */
  expiresAt: string;
  /** The reviewer's reason, when they gave one. */
  reason?: string;
}

/** A tool call and, once recorded, its outcome. */
export interface ToolItem {
  kind: "tool";
  callId: string;
  name: string;
  args: unknown;
  /** The outcome's text; undefined while the tool runs (or waits for its approval). */
  outcome?: string;
  isError: boolean;
  /** Set when the call needs a person's approval: the card shows it and, while pending, Approve/Deny. */
  approval?: ToolApproval;
  submissionId?: string;
}

/** A compaction (its summary stands in for the older history) or a spawned subagent. */
export interface NoteItem {
  kind: "compaction" | "task";
  text: string;
  submissionId?: string;
}

/** A submission's settlement. */
export interface SettledItem {
  kind: "settled";
  submissionId?: string;
  status: SettledStatus;
  errorCode?: SettledErrorCode;
  error?: string;
  usage?: SettledUsage;
}

/**
 * The text and thinking of a completed assistant message (pi-ai's message in its `body`): its
 * text blocks joined as the deltas streamed them. After lean history folded a settled
 * submission's deltas away (ADR 0034), this is the only copy of the text a replay gets.
 */
export function completedMessageText(payload: AssistantMessageCompletedPayload): { text: string; thinking: string } {
  const content = (payload.message.body as { content?: unknown } | undefined)?.content;
  let text = "";
  let thinking = "";
  if (!Array.isArray(content)) return { text, thinking };
  for (const block of content as { type?: unknown; text?: unknown; thinking?: unknown }[]) {
    if (block?.type === "text" && typeof block.text === "string") text += block.text;
    else if (block?.type === "thinking" && typeof block.thinking === "string") thinking += block.thinking;
  }
  return { text, thinking };
}

/**
 * A submission waiting for its next try (ADR 0053): its last `submission_retrying` record's
 * payload (why: `reason`, `error`, the provider's `status`; when: `nextAttemptAt`; the attempts
 * used), until another record of the submission shows the run went on or settled.
 */
export interface RetryState extends SubmissionRetryingPayload {
  submissionId: string;
}

/** One thing on screen. */
export type ViewItem = UserItem | AssistantItem | ToolItem | NoteItem | SettledItem;

/**
 * A conversation as a person reads it, built from its records as they arrive (the replay, then
 * the live tail): user messages, assistant messages with their streamed text, tool calls with
 * their outcomes (and, for a call that needs approval, its pending approval or decision),
 * compactions, settlements.
 *
 * It applies the rule for superseded attempts (ADR 0020): a submission's records carry the
 * `attemptId` of the attempt that wrote them, and after an attempt's process died or its turn
 * failed a new attempt streams that turn again. Once a record of the same submission from another
 * attempt arrives, the earlier attempts' assistant messages that never completed, or completed
 * with an error or aborted, are dropped: they were abandoned (no projection holds them, no later
 * turn builds on them). A message that completed normally stays. A settlement leaves a message
 * it finds unfinished on screen, marked interrupted. Concatenating every `assistant_text_delta`
 * instead shows the abandoned text as part of the answer.
 *
 * A completed message's text is taken from its `assistant_message_completed` record, which holds
 * all of it: a replay of a settled submission whose deltas were folded (ADR 0034) shows the same.
 *
 * Records must be applied in log order, each once (what `HarnessClient.stream` yields).
 */
export class MessageView {
  readonly #items: ViewItem[] = [];
  /** Assistant messages by `attemptId:turnId`. */
  readonly #messages = new Map<string, AssistantItem>();
  readonly #tools = new Map<string, ToolItem>();
  /** The newest attempt seen per submission. */
  readonly #attempts = new Map<string, string>();
  /** Submissions waiting for their next try, by id (ADR 0053). */
  readonly #retrying = new Map<string, RetryState>();

  /** Builds a view from records already read. */
  static of(records: Iterable<ConversationRecord>): MessageView {
    const view = new MessageView();
    for (const record of records) view.apply(record);
    return view;
  }

  /** What is on screen, in order. A message that ended with no text (only tool calls) is left out. */
  get items(): readonly ViewItem[] {
    return this.#items.filter((item) => item.kind !== "assistant" || item.text !== "" || item.thinking !== "" || !item.done);
  }

  /** The assistant's text as shown (of one submission, or of all), messages joined by a blank line. */
  assistantText(submissionId?: string): string {
    return this.items
      .filter((item): item is AssistantItem => item.kind === "assistant" && (submissionId === undefined || item.submissionId === submissionId))
      .map((item) => item.text)
      .join("\n\n");
  }

  /** The submissions waiting for their next try, and why (oldest first; ADR 0053). */
  get retrying(): readonly RetryState[] {
    return [...this.#retrying.values()];
  }

  /** Takes in the next record of the log. */
  apply(record: ConversationRecord): void {
    this.#supersede(record);
    // Any other record of a retrying submission says its run went on (or settled).
    if (record.submissionId !== undefined && record.kind !== "submission_retrying") this.#retrying.delete(record.submissionId);
    switch (record.kind) {
      case "user_message":
        this.#items.push({
          kind: "user",
          text: record.payload.body,
          origin: record.payload.origin,
          submissionId: record.submissionId,
          recordId: record.id,
          ...(record.payload.attachments?.length ? { attachments: [...record.payload.attachments] } : {}),
        });
        return;
      case "signal":
        this.#items.push({ kind: "user", text: record.payload.body, origin: `signal ${record.payload.type}`, submissionId: record.submissionId, recordId: record.id });
        return;
      case "assistant_message_started":
        this.#message(record);
        return;
      case "assistant_text_delta":
        this.#message(record).text += record.payload.text;
        return;
      case "assistant_thinking_delta":
        this.#message(record).thinking += record.payload.text;
        return;
      case "assistant_message_completed": {
        const item = this.#message(record);
        item.done = true;
        // The completed message is the whole text: its deltas may be folded (all or some of them).
        const completed = completedMessageText(record.payload);
        if (completed.text !== "" || completed.thinking !== "") {
          item.text = completed.text;
          item.thinking = completed.thinking;
        }
        const stop = (record.payload.message.body as { stopReason?: unknown } | undefined)?.stopReason;
        item.interrupted = stop === "error" || stop === "aborted";
        return;
      }
      case "assistant_tool_call":
        this.#tool(record.submissionId, record.payload.callId, record.payload.toolName, record.payload.args);
        return;
      case "tool_outcome": {
        const item = this.#tools.get(record.payload.callId);
        if (!item) return;
        item.outcome = (record.payload.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
        item.isError = record.payload.isError === true;
        return;
      }
      case "approval_requested": {
        const p = record.payload;
        const item = this.#tools.get(p.callId) ?? this.#tool(record.submissionId, p.callId, p.toolName, p.args);
        item.approval = { state: "pending", approvalId: p.approvalId, expiresAt: p.expiresAt };
        return;
      }
      case "approval_decided": {
        const p = record.payload;
        const item = this.#tools.get(p.callId);
        if (!item?.approval) return;
        item.approval.state = p.expired ? "expired" : p.approved ? "approved" : "denied";
        if (p.reason !== undefined) item.approval.reason = p.reason;
        return;
      }
      case "compaction":
        this.#items.push({ kind: "compaction", text: record.payload.summary, submissionId: record.submissionId });
        return;
      case "task_spawned":
        this.#items.push({ kind: "task", text: `${record.payload.agent}: ${record.payload.prompt}`, submissionId: record.submissionId });
        return;
      case "submission_settled": {
        const p = record.payload;
        this.#items.push({ kind: "settled", submissionId: record.submissionId, status: p.status, errorCode: p.errorCode, error: p.error, usage: p.usage });
        return;
      }
      case "submission_retrying":
        if (record.submissionId === undefined) return;
        this.#retrying.set(record.submissionId, { ...record.payload, submissionId: record.submissionId });
        return;
      default:
        return;
    }
  }

  #tool(submissionId: string | undefined, callId: string, name: string, args: unknown): ToolItem {
    const item: ToolItem = { kind: "tool", callId, name, args, isError: false, submissionId };
    this.#tools.set(callId, item);
    this.#items.push(item);
    return item;
  }

  #message(record: ConversationRecord): AssistantItem {
    const key = `${record.attemptId ?? ""}:${record.turnId ?? ""}`;
    let item = this.#messages.get(key);
    if (!item) {
      item = { kind: "assistant", text: "", thinking: "", done: false, interrupted: false, submissionId: record.submissionId, attemptId: record.attemptId, turnId: record.turnId };
      this.#messages.set(key, item);
      this.#items.push(item);
    }
    return item;
  }

  /**
   * A record of another attempt of the same submission drops the earlier attempts' unfinished
   * and interrupted messages (the new attempt runs that turn again); a settlement marks the
   * submission's unfinished messages interrupted (nothing will finish them).
   */
  #supersede(record: ConversationRecord): void {
    const { submissionId, attemptId } = record;
    if (submissionId === undefined) return;
    if (record.kind === "submission_settled") {
      for (const item of this.#messages.values()) {
        if (item.submissionId === submissionId && !item.done) item.done = item.interrupted = true;
      }
    }
    if (attemptId === undefined) return;
    const previous = this.#attempts.get(submissionId);
    this.#attempts.set(submissionId, attemptId);
    if (previous === undefined || previous === attemptId) return;
    for (const [key, item] of this.#messages) {
      if (item.submissionId !== submissionId || item.attemptId === attemptId || (item.done && !item.interrupted)) continue;
      this.#messages.delete(key);
      this.#items.splice(this.#items.indexOf(item), 1);
    }
  }
}
