import {
  createInitialSystemMessage,
  toToolDeclaration,
  type AssistantMessage,
  type JsonValue,
  type ImageContent,
  type Message,
  type TextContent,
  type Tool,
  type ToolCall,
  type ToolResultMessage,
  type UserMessage,
} from "@earendil-works/pi-ai";
import type {
  AttachmentRef,
  ConversationRecord,
  ConversationRecordOf,
  SignalPayload,
} from "../protocol/records.ts";
import { activeLeafPath, reduce } from "../conversation/reducer.ts";
import { renderingOf } from "../protocol/attachment-policy.ts";

/** What the agent is configured with, which the log does not hold. */
export interface ProjectionOptions {
  /** The agent's system prompt; leads the transcript (with the tools) as pi's system message. */
  systemPrompt?: string;
  /** The agent's tools; declared in the leading system message, as pi's Agent does itself. */
  tools?: readonly Tool[];
  /**
   * Bytes of the attachments on the path, by digest (the drive loads them): images become image
   * content, text files their text; an attachment without bytes here (or of a type pi-ai cannot
   * carry, a PDF) becomes a note naming it.
   */
  attachments?: AttachmentBytes;
}

/** Attachment bytes by digest. */
export type AttachmentBytes = ReadonlyMap<string, Uint8Array>;

/** The projected transcript, plus what was left out to keep tool calls and results paired. */
export interface Projection {
  messages: Message[];
  /**
   * Call ids of tool calls in projected assistant messages that have no outcome on the path,
   * in path order. Empty once the caller has answered every dangling call
   * (`danglingToolCalls`); otherwise pi-ai's providers fill each gap with an error result
   * ("No result provided") at request time.
   */
  unansweredCallIds: string[];
  /**
   * Record ids of `tool_outcome` records left out: their call belongs to no projected
   * assistant message (dropped as error/aborted, cut off by a compaction, never completed),
   * or an earlier outcome already answered it. Providers reject such orphan results.
   */
  skippedOutcomeIds: string[];
}

/**
 * The pi messages the agent sees for a conversation log: reduces `records`, walks the active
 * leaf path and maps it with {@link projectPath}.
 */
export function project(records: readonly ConversationRecord[], options: ProjectionOptions = {}): Message[] {
  return projectPath(activeLeafPath(reduce(records)), options).messages;
}

/**
 * Maps an active leaf path (root first) to pi messages.
 *
 * - The system prompt and tool declarations come first, as the leading system message built
 *   by pi-ai's own `createInitialSystemMessage` (without it, a rebuilt Agent silently loses
 *   its system prompt).
 * - `user_message` → user message; its attachments follow the text, each labelled with its digest,
 *   type and size: images as image content, text files as text, anything else (or an attachment
 *   whose bytes were not given) as a note.
 * - `signal` → user message whose text is the JSON of `{type, body, sender?, tag?}`, so a
 *   signal never reads as the principal's own words.
 * - `assistant_message_completed` → the stored assistant message, unless its stop reason is
 *   `error` or `aborted` (kept in the log for observability, never replayed). A tool-call block
 *   missing its `thoughtSignature` gets it back from the matching `assistant_tool_call` record.
 * - `tool_outcome` → tool result message, placed directly after its assistant message in the
 *   assistant's call order (providers require results to follow their calls), or left out when
 *   no projected assistant message made the call (see {@link Projection.skippedOutcomeIds}).
 * - `compaction` → a user message holding the summary in a `<summary>` tag, in its place.
 * - Every other kind (lifecycle, deltas, settlement, task spawns, tool-call records) → nothing.
 * - The messages of a submission settled with `excludedFromContext` (an overflow compaction
 *   could not cure) are left out; its compactions stay (they summarize earlier history).
 * - Consecutive user messages (a failed turn's input and the next one, steers and follow-ups
 *   delivered together, signals, a summary and the input after it) become one user message
 *   whose content is their blocks in order: the model sees strictly alternating turns, which
 *   some chat templates require (a dropped error/aborted assistant leaves two inputs adjacent).
 *
 * Unanswered calls are not invented here: they are reported in
 * {@link Projection.unansweredCallIds}. Pure; the records are not mutated and the messages
 * share no objects with them.
 */
export function projectPath(fullPath: readonly ConversationRecord[], options: ProjectionOptions = {}): Projection {
  const path = withoutExcluded(fullPath);
  const outcomes = new Map<string, ConversationRecordOf<"tool_outcome">>();
  const signatures = new Map<string, string>();
  for (const record of path) {
    if (record.kind === "tool_outcome") {
      if (!outcomes.has(record.payload.callId)) outcomes.set(record.payload.callId, record);
    } else if (record.kind === "assistant_tool_call") {
      const { callId, thoughtSignature } = record.payload;
      if (thoughtSignature !== undefined && !signatures.has(callId)) signatures.set(callId, thoughtSignature);
    }
  }

  const messages: Message[] = [];
  const system = createInitialSystemMessage(options.systemPrompt, options.tools?.map(toToolDeclaration));
  if (system !== undefined) messages.push(system);

  const usedOutcomes = new Set<string>();
  const answeredCalls = new Set<string>();
  const unansweredCallIds: string[] = [];
  for (const record of path) {
    switch (record.kind) {
      case "user_message":
        messages.push(userText(record.payload.body, record.payload.attachments, record.time, options.attachments));
        break;
      case "signal":
        messages.push(userText(renderSignal(record.payload), undefined, record.time));
        break;
      case "compaction":
        messages.push(userText(renderSummary(record.payload.summary), undefined, record.time));
        break;
      case "assistant_message_completed": {
        const assistant = storedAssistant(record.payload.message.body, signatures);
        if (assistant === undefined) break;
        messages.push(assistant);
        for (const block of assistant.content) {
          if (block.type !== "toolCall") continue;
          const outcome = answeredCalls.has(block.id) ? undefined : outcomes.get(block.id);
          if (outcome === undefined) {
            unansweredCallIds.push(block.id);
            continue;
          }
          answeredCalls.add(block.id);
          usedOutcomes.add(outcome.id);
          messages.push(toolResult(outcome));
        }
        break;
      }
      default:
        break;
    }
  }
  const skippedOutcomeIds = path
    .filter((r) => r.kind === "tool_outcome" && !usedOutcomes.has(r.id))
    .map((r) => r.id);
  return { messages: mergeUserRuns(messages), unansweredCallIds, skippedOutcomeIds };
}

/**
 * The path without the messages of submissions settled with `excludedFromContext` (their
 * `submission_settled` record on the path says so). Compactions stay. Returns `path` itself when
 * nothing is excluded.
 */
export function withoutExcluded(path: readonly ConversationRecord[]): readonly ConversationRecord[] {
  let excluded: Set<string> | undefined;
  for (const record of path) {
    if (record.kind === "submission_settled" && record.payload.excludedFromContext === true && record.submissionId !== undefined) {
      (excluded ??= new Set()).add(record.submissionId);
    }
  }
  if (excluded === undefined) return path;
  const left = excluded;
  return path.filter((r) => r.kind === "compaction" || r.submissionId === undefined || !left.has(r.submissionId));
}

/**
 * Folds each run of adjacent user messages into one, keeping every block in order (text as
 * text blocks, images as they are) and the first message's timestamp. A lone user message is
 * left as it is. Linear in the blocks: a run's blocks are pushed onto one array, never copied
 * again as the run grows (an imported log of 40,000 adjacent user messages copied them 40,000
 * times, issue 33).
 */
function mergeUserRuns(messages: readonly Message[]): Message[] {
  const merged: Message[] = [];
  /** The blocks of the run the last merged message is, once it holds two messages or more. */
  let run: Exclude<UserMessage["content"], string> | undefined;
  for (const message of messages) {
    const previous = merged.at(-1);
    if (message.role !== "user" || previous?.role !== "user") {
      merged.push(message);
      run = undefined;
      continue;
    }
    if (run === undefined) {
      // The run's first merge: a new message of its own, so the projected message stays unshared.
      run = [...userBlocks(previous)];
      merged[merged.length - 1] = { role: "user", content: run, timestamp: previous.timestamp };
    }
    for (const block of userBlocks(message)) run.push(block);
  }
  return merged;
}

function userBlocks(message: UserMessage): Exclude<UserMessage["content"], string> {
  return typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
}

/** Epoch ms of a record's RFC 3339 time (0 if unparsable, so the message stays valid JSON). */
function timestampOf(time: string): number {
  const ms = Date.parse(time);
  return Number.isFinite(ms) ? ms : 0;
}

function userText(text: string, attachments: readonly AttachmentRef[] | undefined, time: string, bytes?: AttachmentBytes): UserMessage {
  const timestamp = timestampOf(time);
  if (attachments === undefined || attachments.length === 0) return { role: "user", content: text, timestamp };
  if (bytes === undefined) {
    return { role: "user", content: [{ type: "text", text }, { type: "text", text: renderAttachments(attachments) }], timestamp };
  }
  const content: (TextContent | ImageContent)[] = [{ type: "text", text }];
  for (const ref of attachments) content.push(...attachmentContent(ref, bytes.get(ref.digest)));
  return { role: "user", content, timestamp };
}

/** The label the model reads before each attachment. */
export function attachmentLabel(ref: AttachmentRef): string {
  return `[attachment ${ref.digest} (${ref.mediaType}, ${ref.size} bytes)]`;
}

/** One attachment as pi content: an image, a text file's text, or a note (no bytes, or a type pi-ai cannot carry). */
function attachmentContent(ref: AttachmentRef, data: Uint8Array | undefined): (TextContent | ImageContent)[] {
  const label = attachmentLabel(ref);
  const rendering = renderingOf(ref.mediaType);
  if (data === undefined) return [{ type: "text", text: `${label} not available: its bytes are gone` }];
  if (rendering === "image") return [{ type: "text", text: label }, { type: "image", data: Buffer.from(data).toString("base64"), mimeType: ref.mediaType }];
  if (rendering === "text") return [{ type: "text", text: `${label}\n${new TextDecoder().decode(data)}\n[end of attachment]` }];
  return [{ type: "text", text: `${label} not shown: this model interface takes text and images only` }];
}

/** A short note naming each attachment; the bytes live in the AttachmentStore. */
export function renderAttachments(attachments: readonly AttachmentRef[]): string {
  const lines = attachments.map((a) => `- ${a.digest} (${a.mediaType}, ${a.size} bytes)`);
  return `[Attachments, not shown inline:\n${lines.join("\n")}]`;
}

/** The text of a signal message: the JSON of `{type, body, sender?, tag?}`. */
export function renderSignal(signal: SignalPayload): string {
  return JSON.stringify({ type: signal.type, body: signal.body, sender: signal.sender, tag: signal.tag });
}

/** The text standing in for the history a compaction summarized. */
export function renderSummary(summary: string): string {
  return `The earlier part of this conversation was compacted into this summary:\n<summary>\n${summary}\n</summary>`;
}

/** The stored assistant message to replay, or undefined when it is malformed or must not be replayed. */
function storedAssistant(body: unknown, signatures: ReadonlyMap<string, string>): AssistantMessage | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const candidate = body as Partial<AssistantMessage>;
  if (candidate.role !== "assistant" || !Array.isArray(candidate.content)) return undefined;
  if (candidate.stopReason === "error" || candidate.stopReason === "aborted") return undefined;
  // A copy: the Agent owns its transcript, the records stay as stored.
  const message = structuredClone(candidate) as AssistantMessage;
  message.content = message.content.map((block) => {
    if (block.type !== "toolCall" || block.thoughtSignature !== undefined) return block;
    const signature = signatures.get(block.id);
    return signature === undefined ? block : ({ ...block, thoughtSignature: signature } satisfies ToolCall);
  });
  return message;
}

function toolResult(record: ConversationRecordOf<"tool_outcome">): ToolResultMessage {
  const { callId, toolName, content, data, isError } = record.payload;
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: callId,
    toolName,
    content: content === undefined ? [] : structuredClone(content),
    isError: isError === true,
    timestamp: timestampOf(record.time),
  };
  if (data !== undefined) message.details = structuredClone(data) as JsonValue;
  return message;
}
