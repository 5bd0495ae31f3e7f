import { type ApprovalDecision, approvalIdParts } from "../protocol/approvals.ts";
import type { CancelAnswer, DispatchIds } from "./answers.ts";
import type { DecisionOptions } from "./approvals.ts";
import { clientFrom, type ClientSource, type HarnessClient } from "./client.ts";
import { HarnessHttpError } from "./http-error.ts";
import { MessageView, type RetryState, type ToolItem, type ViewItem } from "./message-view.ts";

/**
 * Which session a {@link LiveConversation} follows, through which client: a `client`, or a
 * `baseUrl` and `token` (a string, or a function asked per request and per stream reconnect).
 */
export type LiveConversationOptions = ClientSource & {
  agent: string;
  instance: string;
  /** Default `"default"`. */
  session?: string;
};

/**
 * - `loading`: nothing read yet (after `start`);
 * - `running`: a submission of this session is in flight (queued, running, or waiting on subagents);
 * - `idle`: nothing in flight, every record read;
 * - `error`: reading failed (see `error`); the next action or `start` tries again.
 */
export type LiveConversationStatus = "loading" | "running" | "idle" | "error";

/** What a {@link LiveConversation} shows at one moment. A new object whenever anything changed. */
export interface LiveConversationSnapshot {
  /** The conversation as a person reads it ({@link MessageView}'s items: the view's objects, do not mutate them). */
  readonly messages: readonly ViewItem[];
  readonly status: LiveConversationStatus;
  readonly error?: Error;
  /** The submission in flight that `cancel` cancels (the oldest one not settled), if any. */
  readonly running?: string;
  /**
   * The tool calls waiting for a person's decision, oldest first: the items of `messages` whose
   * `approval.state` is `pending` (decide with `approve` / `deny` by `approval.approvalId`).
   */
  readonly pendingApprovals: readonly PendingApprovalItem[];
  /**
   * The submissions waiting for their next try after a failed one, and why (ADR 0053): the
   * provider unreachable, rate limited or overloaded, when the next try is, the attempts used.
   */
  readonly retrying: readonly RetryState[];
}

/** A tool call of the conversation that waits for a person's approval. */
export type PendingApprovalItem = ToolItem & { approval: NonNullable<ToolItem["approval"]> };

/** First and longest pause between reads while a submission waits on subagents (the stream ends then). */
const POLL_MS = 250;
const MAX_POLL_MS = 5_000;

/**
 * One session of an agent instance as a live, framework-agnostic store: it reads the
 * conversation from its start (resuming one in flight, wherever another page left it), follows
 * it while anything runs and stops reading when the session is idle, renders it with
 * {@link MessageView} (superseded attempts dropped), and dispatches, steers, follows up, cancels
 * and compacts. `subscribe` / `getSnapshot` fit React's `useSyncExternalStore` (see
 * `useConversation` in `resolute-harness/react`) and any other UI library.
 *
 * Each record is read once, by id, across `stop`/`start`, reconnects and idle periods.
 */
export class LiveConversation {
  readonly #client: HarnessClient;
  readonly #agent: string;
  readonly #instance: string;
  readonly #session: string;
  readonly #view = new MessageView();
  readonly #listeners = new Set<() => void>();
  /** Submissions dispatched here or seen in the log, not settled yet, in the order they were first seen. */
  readonly #open = new Set<string>();
  #cursor = "";
  #snapshot: LiveConversationSnapshot = { messages: [], status: "loading", pendingApprovals: [], retrying: [] };
  #reader: AbortController | undefined;
  /** Wakes an idle reader (after a dispatch). */
  #wake: (() => void) | undefined;
  #notifyScheduled = false;
  #status: LiveConversationStatus = "loading";
  #error: Error | undefined;

  constructor(options: LiveConversationOptions) {
    this.#client = clientFrom(options);
    this.#agent = options.agent;
    this.#instance = options.instance;
    this.#session = options.session ?? "default";
  }

  /** Calls `listener` after every change; returns the unsubscribe. */
  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  /** The current snapshot (the same object until something changes). */
  getSnapshot = (): LiveConversationSnapshot => this.#snapshot;

  /** Starts (or restarts, after {@link stop}) reading; a no-op while reading. */
  start = (): void => {
    if (this.#reader) return;
    const reader = new AbortController();
    this.#reader = reader;
    void this.#read(reader.signal);
  };

  /** Stops reading (what is shown stays; {@link start} continues after the last record read). */
  stop = (): void => {
    this.#reader?.abort();
    this.#reader = undefined;
    this.#wake?.();
  };

  /** Dispatches a user message; resolves once it is durable (its reply then streams in). */
  send = async (text: string, options: { dispatchId?: string } = {}): Promise<DispatchIds> => {
    const ids = await this.#client.dispatch(this.#agent, this.#instance, { kind: "user", body: text }, { session: this.#session, dispatchId: options.dispatchId });
    this.#opened(ids.submissionId);
    return ids;
  };

  /** Steers the run in flight (delivered at its next turn boundary). @throws 409 `no_run_in_flight` */
  steer = (text: string): Promise<void> => this.#client.steer(this.#agent, this.#instance, text, { session: this.#session });

  /** A message for when the run in flight would stop. @throws 409 `no_run_in_flight` */
  followUp = (text: string): Promise<void> => this.#client.followUp(this.#agent, this.#instance, text, { session: this.#session });

  /** Cancels the submission in flight (the oldest not settled); undefined when nothing is in flight. */
  cancel = async (reason?: string): Promise<CancelAnswer | undefined> => {
    const running = this.#snapshot.running;
    if (running === undefined) return undefined;
    return this.#client.cancel(this.#agent, this.#instance, running, { reason });
  };

  /** Admits a manual compaction of the session. */
  compact = async (): Promise<DispatchIds> => {
    const ids = await this.#client.compact(this.#agent, this.#instance, { session: this.#session });
    this.#opened(ids.submissionId);
    return ids;
  };

  /**
   * Approves a call waiting for a person (`approvalId`: a pending item's `approval.approvalId`):
   * the tool runs once and the run goes on; the item shows `approved`, then its outcome.
   * @throws {HarnessHttpError} 409 `already_decided` (another decision stands), `already_settled`;
   * 404 `submission_not_found`, `call_not_found`
   */
  approve = (approvalId: string, options: DecisionOptions = {}): Promise<ApprovalDecision> => this.#decide(approvalId, true, options);

  /** Denies a call waiting for a person (see {@link approve}): nothing runs, the model reads the denial and `reason`. */
  deny = (approvalId: string, options: DecisionOptions = {}): Promise<ApprovalDecision> => this.#decide(approvalId, false, options);

  async #decide(approvalId: string, approved: boolean, options: DecisionOptions): Promise<ApprovalDecision> {
    const { submissionId, callId } = approvalIdParts(approvalId);
    const decision = approved
      ? await this.#client.approve(this.#agent, this.#instance, submissionId, callId, options)
      : await this.#client.deny(this.#agent, this.#instance, submissionId, callId, options);
    // The run resumes now: read again at once rather than at the next (backed-off) poll.
    this.#wake?.();
    return decision;
  }

  #opened(submissionId: string): void {
    this.#open.add(submissionId);
    this.#set("running");
    this.#wake?.();
  }

  async #read(signal: AbortSignal): Promise<void> {
    let pause = POLL_MS;
    while (!signal.aborted) {
      try {
        let seen = false;
        for await (const record of this.#client.stream(this.#agent, this.#instance, { session: this.#session, after: this.#cursor, signal })) {
          seen = true;
          this.#cursor = record.id;
          this.#view.apply(record);
          const id = record.submissionId;
          if (id !== undefined) {
            if (record.kind === "submission_settled") this.#open.delete(id);
            else this.#open.add(id);
          }
          this.#status = this.#open.size > 0 ? "running" : "idle";
          this.#changed();
        }
        this.#error = undefined;
        if (this.#open.size > 0) {
          // Caught up while something is in flight: it waits on subagents (the stream ends then), or
          // was dispatched a moment ago. Look again, less often the longer nothing comes.
          this.#set("running");
          pause = seen ? POLL_MS : Math.min(MAX_POLL_MS, pause * 2);
          await this.#idle(signal, pause);
          continue;
        }
        pause = POLL_MS;
        this.#set("idle");
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof HarnessHttpError && err.code === "conversation_not_found") {
          this.#set(this.#open.size > 0 ? "running" : "idle"); // nothing dispatched to this session yet
          if (this.#open.size > 0) await this.#idle(signal, POLL_MS);
          else await this.#idle(signal);
          continue;
        }
        this.#error = err instanceof Error ? err : new Error(String(err));
        this.#set("error");
      }
      // Idle (or failed): wait for a dispatch of ours before reading on.
      await this.#idle(signal);
    }
  }

  /** Resolves after `ms` (if given), at a dispatch of ours, or when reading stops. */
  #idle(signal: AbortSignal, ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.#wake = done;
    });
  }

  #set(status: LiveConversationStatus): void {
    if (status === this.#status && status !== "error") return;
    this.#status = status;
    this.#changed();
  }

  /** A new snapshot, announced once per macrotask however many records arrived in it. */
  #changed(): void {
    if (this.#notifyScheduled) return;
    this.#notifyScheduled = true;
    setTimeout(() => {
      this.#notifyScheduled = false;
      const running = this.#open.values().next().value;
      const messages = this.#view.items;
      const pendingApprovals = messages.filter((m): m is PendingApprovalItem => m.kind === "tool" && m.approval?.state === "pending");
      const snapshot: { -readonly [K in keyof LiveConversationSnapshot]: LiveConversationSnapshot[K] } = {
        messages,
        status: this.#status,
        pendingApprovals,
        retrying: this.#view.retrying,
      };
      if (this.#error) snapshot.error = this.#error;
      if (running !== undefined) snapshot.running = running;
      this.#snapshot = snapshot;
      for (const listener of this.#listeners) listener();
    }, 0);
  }
}
