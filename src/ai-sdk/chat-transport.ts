import type { ChatRequestOptions, ChatTransport } from "ai";
import type { DecisionOptions } from "../client/approvals.ts";
import { clientFrom, type ClientSource, type HarnessClient } from "../client/client.ts";
import { type ApprovalDecision, approvalIdParts } from "../protocol/approvals.ts";
import type { ConversationRecord } from "../protocol/records.ts";
import type { SubmissionSummary } from "../protocol/submission-view.ts";
import { userMessageOf, uiMessagesOf } from "./history.ts";
import { SubmissionChunker } from "./submission-chunker.ts";
import type { HarnessUIMessage, HarnessUIMessageChunk } from "./ui-message.ts";

/**
 * Options of {@link HarnessChatTransport}. The harness is reached through `client` (`createClient`
 * of `resolute-harness/client`), or through `baseUrl` and `token` (the client's `token` option: a
 * string, or a function asked before every request and stream reconnect).
 */
export type HarnessChatTransportOptions = ClientSource & {
  /** The agent every chat talks to. */
  agent: string;
  /** The agent instance: one for every chat, or per chat id. */
  instance: string | ((chatId: string) => string);
  /** The session of a chat (default: the chat id, so `useChat({id})` names the conversation). */
  session?: (chatId: string) => string;
  /**
   * `stop()` (and `useChat` unmounting, which calls it) cancels the submission it stopped
   * reading: default `true`. With `false` the run goes on and only the reading stops; cancel it
   * with {@link HarnessChatTransport.cancel}.
   */
  stopCancels?: boolean;
};

/** What the transport knows of one chat. */
interface ChatState {
  /** The id of the last record read (the resume point of the next stream). */
  cursor?: string;
  /** Where each unsettled submission's records began: the record id before its first. */
  starts: Map<string, string>;
  /** Reconnects started, so an abort of a superseded one is not taken for a stop. */
  reconnects: number;
  /** The submission being read, for {@link HarnessChatTransport.cancel}. */
  following?: string;
}

/** Listing page the transport reads to find a chat's unsettled submissions. */
const LISTING_LIMIT = 100;

/**
 * A `ChatTransport` for the AI SDK's `useChat` (`ai` 5 or later) over the harness's HTTP API:
 *
 * - `sendMessages` dispatches the last user message (its id is the dispatch id, so a retried
 *   send is the same submission) and streams that submission's reply as UI message chunks (see
 *   {@link SubmissionChunker}) until it settles.
 * - `reconnectToStream` (`useChat({resume: true})`, a reload, a dropped connection) finds the
 *   session's unsettled submission and replays its reply from its first record id, then follows
 *   it live: a complete replay by record ids (`resumeStreamIsReplay`), so nothing is missed and
 *   nothing shown twice, with no store of its own (the conversation log is the store).
 * - `stop()` cancels the submission (unless `stopCancels: false`).
 * - A tool call that needs a person's approval shows as its `dynamic-tool` part in the AI SDK's
 *   `approval-requested` state and a `data-approval` part; {@link approve} / {@link deny} decide
 *   it (by the part's `approval.id`), and the reply, still streaming, goes on.
 * - {@link loadMessages} reads a chat's history as UI messages, for `useChat({messages})`.
 *
 * A chat is one harness session: `useChat({ id: session, transport, resume: true, messages })`.
 * Regenerating is refused (the log is append-only: send again instead); file parts are refused.
 */
export class HarnessChatTransport implements ChatTransport<HarnessUIMessage> {
  /** A reconnect replays the reply from its first record: `useChat` starts the message afresh. */
  readonly resumeStreamIsReplay = true;
  readonly #client: HarnessClient;
  readonly #agent: string;
  readonly #instance: (chatId: string) => string;
  readonly #session: (chatId: string) => string;
  readonly #stopCancels: boolean;
  readonly #chats = new Map<string, ChatState>();

  constructor(options: HarnessChatTransportOptions) {
    this.#client = clientFrom(options);
    this.#agent = options.agent;
    const instance = options.instance;
    this.#instance = typeof instance === "string" ? () => instance : instance;
    this.#session = options.session ?? ((chatId) => chatId);
    this.#stopCancels = options.stopCancels ?? true;
  }

  async sendMessages(
    options: {
      trigger: "submit-message" | "regenerate-message";
      chatId: string;
      messageId: string | undefined;
      messages: HarnessUIMessage[];
      abortSignal: AbortSignal | undefined;
    } & ChatRequestOptions,
  ): Promise<ReadableStream<HarnessUIMessageChunk>> {
    if (options.trigger === "regenerate-message") {
      throw new Error("regenerate is not supported: a harness conversation is an append-only log (send the message again instead)");
    }
    const message = options.messages.at(-1);
    if (message?.role !== "user") throw new Error("sendMessages: the last message is not a user message");
    if (message.parts.some((p) => p.type === "file")) throw new Error("sendMessages: file parts are not supported by the harness transport");
    const body = message.parts.map((p) => (p.type === "text" ? p.text : "")).join("");
    const { chatId, abortSignal } = options;
    const chat = this.#chat(chatId);
    const { submissionId } = await this.#client.dispatch(
      this.#agent,
      this.#instance(chatId),
      { kind: "user", body },
      { session: this.#session(chatId), dispatchId: message.id, signal: abortSignal },
    );
    return this.#follow(chatId, submissionId, chat.cursor ?? "", abortSignal, false);
  }

  async reconnectToStream(options: { chatId: string; abortSignal?: AbortSignal } & ChatRequestOptions): Promise<ReadableStream<HarnessUIMessageChunk> | null> {
    const { chatId, abortSignal } = options;
    const chat = this.#chat(chatId);
    chat.reconnects++;
    const target = (await this.#unsettled(chatId, abortSignal))[0];
    if (target === undefined) return null;
    // Replayed from its first record (its start, when a stream or the history saw it; else from
    // before the last record read, which is before any of its records).
    const after = chat.starts.get(target.id) ?? chat.cursor ?? "";
    return this.#follow(chatId, target.id, after, abortSignal, true);
  }

  /**
   * A chat's conversation so far as UI messages (for `useChat({ messages })`): every settled
   * submission with its reply, and the user message of the one still running, whose reply
   * `reconnectToStream` (`resume: true`) then replays and follows. Reads the log from its start;
   * an empty list when the session has no conversation yet.
   */
  async loadMessages(chatId: string, options: { signal?: AbortSignal } = {}): Promise<HarnessUIMessage[]> {
    const chat = this.#chat(chatId);
    const listing = await this.#listing(chatId, options.signal);
    if (listing === undefined) return [];
    const unsettled = new Set(listing.filter((s) => s.status !== "settled").map((s) => s.id));
    // Settled submissions of the listing not read yet: once none is left, a submission the
    // listing did not name is younger than it (it may still run), so the listing is read again.
    const pendingSettled = new Set(listing.filter((s) => s.status === "settled").map((s) => s.id));
    const listed = new Set(listing.map((s) => s.id));
    const records: ConversationRecord[] = [];
    let cursor = "";
    const controller = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    try {
      for await (const record of this.#client.stream(this.#agent, this.#instance(chatId), { session: this.#session(chatId), signal })) {
        const id = record.submissionId;
        if (id !== undefined && !unsettled.has(id) && !listed.has(id) && pendingSettled.size === 0) {
          const fresh = await this.#listing(chatId, options.signal);
          for (const s of fresh ?? []) if (s.status !== "settled") unsettled.add(s.id);
          listed.add(id);
        }
        if (id !== undefined && unsettled.has(id)) {
          // The running submission: its user message now, its reply replayed by the resume from
          // here (the chunks skip the user message).
          chat.starts.set(id, cursor);
          if (userMessageOf(record)) records.push(record);
          controller.abort();
          break;
        }
        records.push(record);
        cursor = record.id;
        advance(chat, cursor);
        if (id !== undefined && record.kind === "submission_settled") pendingSettled.delete(id);
      }
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    }
    return uiMessagesOf(records);
  }

  /**
   * Approves a call waiting for a person: `approvalId` is its `dynamic-tool` part's
   * `approval.id` (or its `data-approval` part's `approvalId`). The tool runs once and the reply
   * goes on in the stream already open (the parts then show `approval-responded` and the output).
   * Decide here rather than with `useChat`'s `addToolApprovalResponse`, which only changes the
   * page's copy: the harness's log is what every tab and a reload read.
   * @throws {HarnessHttpError} 409 `already_decided` (another decision stands), `already_settled`;
   * 404 `submission_not_found`, `call_not_found` (see the client's `approve`)
   */
  async approve(chatId: string, approvalId: string, options: DecisionOptions = {}): Promise<ApprovalDecision> {
    const { submissionId, callId } = approvalIdParts(approvalId);
    return this.#client.approve(this.#agent, this.#instance(chatId), submissionId, callId, options);
  }

  /** Denies a call waiting for a person (see {@link approve}): nothing runs, the model reads the denial and `reason`. */
  async deny(chatId: string, approvalId: string, options: DecisionOptions = {}): Promise<ApprovalDecision> {
    const { submissionId, callId } = approvalIdParts(approvalId);
    return this.#client.deny(this.#agent, this.#instance(chatId), submissionId, callId, options);
  }

  /**
   * Cancels the submission the chat's stream is reading (what `stop()` does unless
   * `stopCancels` is false). Resolves false when nothing is being read.
   */
  async cancel(chatId: string, reason = "stopped by the user"): Promise<boolean> {
    const submissionId = this.#chats.get(chatId)?.following;
    if (submissionId === undefined) return false;
    await this.#client.cancel(this.#agent, this.#instance(chatId), submissionId, { reason });
    return true;
  }

  #chat(chatId: string): ChatState {
    let chat = this.#chats.get(chatId);
    if (!chat) {
      chat = { starts: new Map(), reconnects: 0 };
      this.#chats.set(chatId, chat);
    }
    return chat;
  }

  /** The session's newest submissions; undefined when it has none (no conversation yet). */
  async #listing(chatId: string, signal: AbortSignal | undefined): Promise<SubmissionSummary[] | undefined> {
    const page = await this.#client.listSubmissions(this.#agent, this.#instance(chatId), { session: this.#session(chatId), limit: LISTING_LIMIT, signal });
    return page.submissions.length === 0 ? undefined : page.submissions;
  }

  /** The session's unsettled submissions, oldest first (the first is its head). */
  async #unsettled(chatId: string, signal: AbortSignal | undefined): Promise<SubmissionSummary[]> {
    const listing = (await this.#listing(chatId, signal)) ?? [];
    return listing.filter((s) => s.status !== "settled").sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * The reply of `submissionId` as chunks, from the records after `after` until its settlement.
   * Aborting `abortSignal` ends it and (with `stopCancels`) cancels the submission, unless it
   * was a reconnect that a newer reconnect of the chat replaced.
   */
  #follow(chatId: string, submissionId: string, after: string, abortSignal: AbortSignal | undefined, resumed: boolean): ReadableStream<HarnessUIMessageChunk> {
    const chat = this.#chat(chatId);
    const reconnectsAtStart = chat.reconnects;
    chat.following = submissionId;
    const reading = new AbortController();
    const signal = abortSignal ? AbortSignal.any([abortSignal, reading.signal]) : reading.signal;
    const chunker = new SubmissionChunker(submissionId);
    const onStop = () => {
      if (chunker.settled || !this.#stopCancels) return;
      // `useChat` aborts a reconnect it replaces with a newer one (a remount) right before
      // starting it: only an abort that no reconnect followed is a stop.
      setTimeout(() => {
        if (resumed && chat.reconnects !== reconnectsAtStart) return;
        this.#client.cancel(this.#agent, this.#instance(chatId), submissionId, { reason: "stopped by the user" }).catch(() => {});
      }, 0);
    };
    abortSignal?.addEventListener("abort", onStop, { once: true });
    let done = false;
    return new ReadableStream<HarnessUIMessageChunk>({
      start: (controller) => {
        // After the reader cancelled, the controller refuses everything: stop feeding it.
        const enqueue = (chunks: HarnessUIMessageChunk[]) => {
          if (!done) for (const chunk of chunks) controller.enqueue(chunk);
        };
        const end = (err?: unknown) => {
          if (done) return;
          done = true;
          if (err === undefined) controller.close();
          else controller.error(err);
        };
        enqueue(chunker.start());
        let previous = after;
        const onRecord = (record: ConversationRecord) => {
          const id = record.submissionId;
          if (id !== undefined && record.kind === "submission_settled") chat.starts.delete(id);
          else if (id !== undefined && !chat.starts.has(id)) chat.starts.set(id, previous);
          previous = record.id;
          advance(chat, record.id);
          enqueue(chunker.apply(record));
        };
        this.#client
          .waitForSettled(this.#agent, this.#instance(chatId), submissionId, { session: this.#session(chatId), after, signal, onRecord })
          .then(
            () => end(),
            (err: unknown) => end(signal.aborted ? undefined : err),
          )
          .finally(() => {
            abortSignal?.removeEventListener("abort", onStop);
            if (chat.following === submissionId) chat.following = undefined;
          });
      },
      cancel: () => {
        done = true;
        reading.abort();
      },
    });
  }
}

/** Moves the chat's resume point forward (record ids grow along the log; two streams may read at once). */
function advance(chat: ChatState, recordId: string): void {
  if (chat.cursor === undefined || recordId > chat.cursor) chat.cursor = recordId;
}
