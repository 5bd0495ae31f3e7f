import {
  Agent,
  type AgentEvent,
  type AgentTool,
  type AgentToolResult,
  type AgentToolUpdateCallback,
  type AgentTurnContext,
  type AgentTurnDecision,
  type StreamFn,
} from "@earendil-works/pi-agent-core";
import {
  contentText,
  createAssistantMessageEventStream,
  isContextOverflow,
  isRetryableAssistantError,
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type AssistantMessageEventStream,
  type Model,
  type SimpleStreamOptions,
  type TranscriptContext,
} from "@earendil-works/pi-ai";
import { danglingToolCalls, danglingToolOutcome } from "../conversation/dangling.ts";
import { newId } from "../conversation/ids.ts";
import { projectPath } from "./projection.ts";
import type { ConversationRecord, RecordDraft, RecordKind, RecordPayloads } from "../conversation/records.ts";
import { activeLeafPath, reduce } from "../conversation/reducer.ts";
import { isHarnessError, StoreFailure } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { Correlation, HarnessEvent, Interceptor, Operation } from "../ports/observer.ts";
import type { LogWriter } from "../ports/log-writer.ts";
import type { DispatchMessage, InboxKind } from "../ports/submission.ts";
import { agentBudgets, type AgentBudgets, type AgentSetup } from "./agent-setup.ts";
import { emptyAssistantMessage } from "./block-stream.ts";
import { DeltaBatcher, type DeltaBatch, type FlushPolicy } from "./delta-batcher.ts";
import { formatDuration } from "./duration.ts";
import { runInterceptors } from "./interceptors.ts";
import { withStrictTurns } from "./strict-turns.ts";
import {
  checkStructuredResult,
  correctiveMessage,
  DEFAULT_RESULT_RETRIES,
  resultInvalidError,
} from "./structured-result.ts";

/** Everything one drive of one claimed submission needs. */
export interface DriveContext {
  /** The attempt's writer of the log (the engine's; settlement appends through it afterwards). */
  log: LogWriter;
  clock: Clock;
  /** The submission's input. */
  input: DispatchMessage;
  /** The claim continues a run from the log (a resume or continuation claim). */
  resume: boolean;
  setup: AgentSetup;
  flushPolicy: FlushPolicy;
  /** Already exception-safe. */
  observe: (e: HarnessEvent) => void;
  /** Operation, turn and tool boundaries run here; the attempt boundary is the engine's. */
  interceptors: Interceptor[];
  /** Aborted on shutdown or lease loss: stop promptly and return `interrupted`. */
  signal: AbortSignal;
  /** True → stop at the next point where the next step is a model call, and hand off. */
  shouldYield: () => boolean;
  /** Epoch ms: the durability deadline (createdAt + budget). */
  deadline: number;
}

/** How a drive ended. */
export type DriveOutcome =
  | { kind: "completed"; result?: unknown }
  /** Stopped where the next step is a model call (the log ends with tool results or an injected user message). */
  | { kind: "continuation" }
  | { kind: "transient"; error: string }
  | { kind: "failed"; errorCode: "run_failed" | "result_schema_invalid" | "timeout_exceeded"; error: string }
  | { kind: "interrupted" };

/**
 * Drives one claimed submission for one attempt: rebuilds the agent from the conversation log
 * (the log is the truth; every call starts from it, so calling again after a crash, a hand-off
 * or a refused settlement is safe), reconciles dangling tool calls, records the input once, runs
 * the pi agent and appends what happens as fenced records, delivers steer and follow-up messages
 * from the inbox at turn boundaries, validates a requested structured result, and classifies
 * how the run ended. Never throws for run outcomes.
 */
export function drive(ctx: DriveContext): Promise<DriveOutcome> {
  return new SubmissionDrive(ctx).run();
}

/** True for an assistant message that ended in a provider error or was aborted. */
function isFailedStop(message: AssistantMessage): boolean {
  return message.stopReason === "error" || message.stopReason === "aborted";
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function errorResult(text: string): AgentToolResult<Record<string, never>> {
  return { content: [{ type: "text", text }], details: {}, isError: true };
}

const TOOL_ABORTED = "Operation aborted";
/** Abort reason for our own timers (an explicit reason spares a DOMException per turn and tool). */
const SETTLED = "settled";

/** A pending bound (turn or tool timeout). */
interface Alarm {
  at: number;
  fire: () => void;
}

class SubmissionDrive {
  readonly #ctx: DriveContext;
  readonly #budgets: AgentBudgets;
  readonly #batcher: DeltaBatcher;
  #agent: Agent | undefined;
  /** Pending turn and tool bounds, and the timer that fires them. */
  readonly #alarms = new Set<Alarm>();
  #watchdog: AbortController | undefined;
  /** The model response being streamed, if any. */
  #inFlight: AssistantMessageEventStream | undefined;
  /** Cancels of the tool calls running now. */
  readonly #runningTools = new Set<() => void>();
  /** The first reason the run must stop (interrupted always wins). */
  #halt: DriveOutcome | undefined;
  #turnId: string | undefined;
  #turn = 0;
  /** Correlation of the current turn, shared by its events (observers are read-only). */
  #turnCorrelation: Correlation | undefined;
  /** The last assistant message of the current operation. */
  #lastAssistant: AssistantMessage | undefined;
  /** Set when the current operation's model turn timed out (classified transient). */
  #turnTimeout: string | undefined;

  constructor(ctx: DriveContext) {
    this.#ctx = ctx;
    this.#budgets = agentBudgets(ctx.setup);
    this.#batcher = new DeltaBatcher(ctx.flushPolicy, ctx.clock);
  }

  async run(): Promise<DriveOutcome> {
    const { signal } = this.#ctx;
    if (signal.aborted) return { kind: "interrupted" };
    const onAbort = () => {
      this.#stop({ kind: "interrupted" });
      this.#abortRun();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.#runLoop();
    } catch (err) {
      if (this.#halt) return this.#halt;
      if (signal.aborted || isHarnessError(err, "claim_lost")) return { kind: "interrupted" };
      if (isHarnessError(err, "store_failure")) return { kind: "transient", error: err.message };
      return { kind: "failed", errorCode: "run_failed", error: errorText(err) };
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#watchdog?.abort(SETTLED);
    }
  }

  /**
   * Stops the run promptly: aborts the agent, ends the in-flight model response and releases
   * running tool calls (providers and tools that ignore their signal cannot wedge the run).
   * Only this drive aborts its agent, so this is the one place that needs to.
   */
  #abortRun(): void {
    this.#agent?.abort();
    if (this.#inFlight) endStream(this.#inFlight, this.#ctx.setup.model, this.#ctx.clock.now(), "aborted", "Request was aborted");
    for (const cancel of [...this.#runningTools]) cancel();
  }

  /** Calls `fire` once `ms` of clock time have passed, unless cleared first (see the watchdog). */
  #alarm(ms: number, fire: () => void): Alarm {
    const alarm: Alarm = { at: this.#ctx.clock.now() + ms, fire };
    this.#alarms.add(alarm);
    if (this.#watchdog === undefined) this.#startWatchdog();
    return alarm;
  }

  /**
   * One timer per drive instead of one per turn and tool call: it wakes every twentieth of the
   * shortest bound and fires the alarms that are due (a bound may fire up to 5% late).
   */
  #startWatchdog(): void {
    const stop = new AbortController();
    this.#watchdog = stop;
    const { clock } = this.#ctx;
    const tick = Math.max(1, Math.min(this.#budgets.turnTimeoutMs, this.#budgets.toolTimeoutMs) / 20);
    void (async () => {
      for (;;) {
        try {
          await clock.sleep(tick, stop.signal);
        } catch {
          return;
        }
        const now = clock.now();
        for (const alarm of [...this.#alarms]) {
          if (now < alarm.at) continue;
          this.#alarms.delete(alarm);
          alarm.fire();
        }
      }
    })();
  }

  // ---- the drive -------------------------------------------------------------------------

  async #runLoop(): Promise<DriveOutcome> {
    const { log, setup, input } = this.#ctx;
    const { submissionId, conversationId } = log.correlation;
    const records = await log.read();
    if (this.#halt) return this.#halt;
    let path = activeLeafPath(reduce(records));

    // Synthesized outcomes for calls whose result was never recorded go first, so they sit
    // right after their call; then this submission's input, once per submission.
    const dangling = danglingToolCalls(path);
    const drafts: RecordDraft[] = dangling.map((call) => this.#draft("tool_outcome", danglingToolOutcome(call), false));
    let corrections = 0;
    let hasInput = false;
    for (const r of records) {
      if (r.submissionId !== submissionId) continue;
      if (r.kind === "signal" || (r.kind === "user_message" && r.payload.origin === undefined)) hasInput = true;
      else if (r.kind === "user_message" && r.payload.origin === "correction") corrections++;
      else if (r.kind === "assistant_message_started") this.#turn++;
    }
    if (!hasInput) drafts.push(this.#inputDraft());
    // (An empty log lacks its first record, the admission's append of it failed: the writer
    // writes it first.)
    if (drafts.length > 0) path = path.concat(await log.append(drafts));
    if (dangling.length > 0) {
      this.#ctx.observe({
        type: "recovery",
        correlation: this.#correlation(),
        decision: "dangling_tool_call_reconciled",
        detail: `synthesized ${dangling.length} error tool_outcome record(s) for interrupted tool call(s): ${dangling.map((d) => d.callId).join(", ")}`,
      });
    }

    const agent = new Agent({
      initialState: {
        model: setup.model,
        thinkingLevel: setup.thinkingLevel ?? "off",
        tools: (setup.tools ?? []).map((tool) => this.#wrapTool(tool)),
        messages: projectPath(path, { systemPrompt: setup.systemPrompt, tools: setup.tools }).messages,
      },
      streamFn: this.#streamFn,
      finishTurn: (turn) => this.#finishTurn(turn),
      steeringMode: "all",
      followUpMode: "all",
      sessionId: conversationId,
    });
    this.#agent = agent;
    agent.subscribe((event) => this.#onEvent(event));
    if (this.#halt) return this.#halt;

    let operation: Operation = this.#ctx.resume ? "resume" : "prompt";
    // A transcript ending in a user message or tool results means the next step is a model call;
    // one ending in a completed assistant means the run had finished (only the inbox may remain).
    // The input is never prompted again: it is in the log, so `continue()` picks it up.
    let runModel = this.#tailNeedsModel();
    for (;;) {
      if (runModel) {
        if (this.#ctx.clock.now() > this.#ctx.deadline) return this.#timeoutOutcome();
        const outcome = await this.#operate(operation, () => agent.continue());
        operation = "prompt";
        runModel = false;
        if (outcome) return outcome;
      }
      // The run would stop here: deliver what the inbox holds before finishing.
      const delivered = await this.#drain(["steer", "followUp"]);
      if (this.#halt) return this.#halt;
      if (delivered.length > 0) {
        this.#inject(delivered);
        runModel = true;
        if (this.#ctx.shouldYield()) return { kind: "continuation" };
        continue;
      }
      const schema = input.resultSchema;
      if (schema === undefined) return { kind: "completed" };
      const verdict = checkStructuredResult(this.#lastAssistantText(), schema);
      if (verdict.ok) return { kind: "completed", result: verdict.value };
      if (corrections >= (input.resultRetries || DEFAULT_RESULT_RETRIES)) {
        return { kind: "failed", errorCode: "result_schema_invalid", error: resultInvalidError(verdict.reason) };
      }
      const correction = this.#draft("user_message", { body: correctiveMessage(verdict.reason, schema), origin: "correction" }, false);
      this.#inject(await log.append([correction]));
      corrections++;
      runModel = true;
      if (this.#ctx.shouldYield()) return { kind: "continuation" };
    }
  }

  /** One session operation (a `continue()` of the agent) inside its interceptor boundary. */
  async #operate(operation: Operation, start: () => Promise<void>): Promise<DriveOutcome | undefined> {
    const correlation = this.#correlation(false);
    this.#ctx.observe({ type: "operation_started", correlation, operation });
    this.#lastAssistant = undefined;
    this.#turnTimeout = undefined;
    try {
      const ran = await runInterceptors(this.#ctx.interceptors, { kind: "operation", correlation, operation }, start);
      if (!ran) this.#stop({ kind: "failed", errorCode: "run_failed", error: `${operation} operation aborted by an interceptor` });
    } catch (err) {
      this.#stop({ kind: "failed", errorCode: "run_failed", error: errorText(err) });
    }
    const outcome = this.#halt ?? this.#classifyLastAssistant();
    const error =
      outcome === undefined || outcome.kind === "continuation" || outcome.kind === "completed"
        ? ""
        : outcome.kind === "interrupted"
          ? "interrupted"
          : outcome.error;
    this.#ctx.observe({ type: "operation_ended", correlation, operation, error });
    return outcome;
  }

  /** pi resolves `continue()` on provider errors: the last assistant says how the turn ended. */
  #classifyLastAssistant(): DriveOutcome | undefined {
    const message = this.#lastAssistant;
    if (message === undefined || !isFailedStop(message)) return undefined;
    const text = message.errorMessage || `model turn ended with stop reason "${message.stopReason}"`;
    if (this.#turnTimeout !== undefined) return { kind: "transient", error: this.#turnTimeout };
    if (message.stopReason === "aborted") return { kind: "transient", error: text };
    if (isContextOverflow(message, this.#ctx.setup.model.contextWindow)) {
      // Compaction is not implemented yet: an overflow is terminal.
      return { kind: "failed", errorCode: "run_failed", error: `context overflow (compaction not available): ${text}` };
    }
    if (isRetryableAssistantError(message)) return { kind: "transient", error: text };
    return { kind: "failed", errorCode: "run_failed", error: text };
  }

  #timeoutOutcome(): DriveOutcome {
    return {
      kind: "failed",
      errorCode: "timeout_exceeded",
      error: `durability timeout exceeded mid-run (budget ${formatDuration(this.#budgets.submissionTimeoutMs)})`,
    };
  }

  /** Records the first stop reason; an interruption overrides any other. */
  #stop(outcome: DriveOutcome): void {
    if (this.#halt === undefined || outcome.kind === "interrupted") this.#halt = outcome;
  }

  /** True when the transcript ends where the next step is a model call. */
  #tailNeedsModel(): boolean {
    const messages = this.#agent!.state.messages;
    for (let i = messages.length - 1; i >= 0; i--) {
      const role = messages[i]!.role;
      if (role === "system") continue;
      return role === "user" || role === "toolResult";
    }
    return false;
  }

  #lastAssistantText(): string {
    const messages = this.#agent!.state.messages;
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i]!;
      if (m.role === "assistant" && !isFailedStop(m)) return contentText(m.content.filter((c) => c.type === "text"));
    }
    return "";
  }

  /** Queues recorded user messages for the agent, exactly as a rebuild would project them. */
  #inject(records: readonly ConversationRecord[]): void {
    for (const message of projectPath(records).messages) this.#agent!.steer(message);
  }

  // ---- turn boundary ----------------------------------------------------------------------

  async #finishTurn(turn: AgentTurnContext): Promise<AgentTurnDecision | undefined> {
    if (this.#halt) return { action: "end" };
    if (isFailedStop(turn.message)) return undefined; // pi ends the run itself
    if (this.#ctx.clock.now() > this.#ctx.deadline) {
      this.#stop(this.#timeoutOutcome());
      return { action: "end" };
    }
    // Steers that arrived during the turn are delivered at this boundary (pi polls its
    // steering queue right after turn_end).
    const steers = await this.#drain(["steer"]);
    if (this.#halt) return { action: "end" };
    this.#inject(steers);
    const modelCallNext = turn.toolResults.length > 0 || steers.length > 0;
    if (modelCallNext && this.#ctx.shouldYield()) {
      this.#stop({ kind: "continuation" });
      return { action: "end" };
    }
    return undefined;
  }

  // ---- events → records --------------------------------------------------------------------

  /**
   * Maps an agent event to records and observer events. pi awaits listeners in order, so a
   * returned promise is the durability barrier; the hot path (a batched delta) returns nothing.
   */
  #onEvent(event: AgentEvent): Promise<void> | undefined {
    const { observe } = this.#ctx;
    switch (event.type) {
      case "turn_start":
        this.#turnId = newId(this.#ctx.clock.now());
        this.#turnCorrelation = undefined;
        this.#turn++;
        observe({ type: "turn_started", correlation: this.#correlation(), turn: this.#turn });
        return undefined;
      case "turn_end":
        observe({ type: "turn_ended", correlation: this.#correlation(), turn: this.#turn });
        return undefined;
      case "message_start":
        if (event.message.role !== "assistant") return undefined;
        return this.#write([this.#draft("assistant_message_started", { model: this.#ctx.setup.model.id, messageType: "message" })]);
      case "message_update": {
        const e = event.assistantMessageEvent;
        if (e.type !== "text_delta" && e.type !== "thinking_delta") return undefined;
        const kind = e.type === "text_delta" ? "assistant_text_delta" : "assistant_thinking_delta";
        observe({ type: "delta", correlation: this.#correlation(), kind, text: e.delta });
        const batches = this.#batcher.push(kind, e.delta);
        return batches.length > 0 ? this.#write(batches.map((b) => this.#deltaDraft(b)), false) : undefined;
      }
      case "message_end":
        // A message end always flushes pending deltas.
        return event.message.role === "assistant" ? this.#write(this.#assistantEnd(event.message)) : this.#write([]);
      case "tool_execution_start":
        observe({ type: "tool_call_started", correlation: this.#correlation(), callId: event.toolCallId, toolName: event.toolName });
        return undefined;
      case "tool_execution_update":
        observe({
          type: "tool_call_updated",
          correlation: this.#correlation(),
          callId: event.toolCallId,
          toolName: event.toolName,
          result: event.partialResult,
        });
        return undefined;
      case "tool_execution_end":
        return this.#toolEnd(event);
      default:
        return undefined;
    }
  }

  /** The records of an assistant message end: tool calls (unless it failed), then the message. */
  #assistantEnd(message: AssistantMessage): RecordDraft[] {
    this.#lastAssistant = message;
    const drafts: RecordDraft[] = [];
    if (!isFailedStop(message)) {
      for (const block of message.content) {
        if (block.type !== "toolCall") continue;
        const payload: RecordPayloads["assistant_tool_call"] = { callId: block.id, toolName: block.name, args: block.arguments };
        if (block.thoughtSignature !== undefined) payload.thoughtSignature = block.thoughtSignature;
        drafts.push(this.#draft("assistant_tool_call", payload));
      }
    }
    drafts.push(this.#draft("assistant_message_completed", { message: { role: "assistant", type: "message", body: message } }));
    return drafts;
  }

  async #toolEnd(event: Extract<AgentEvent, { type: "tool_execution_end" }>): Promise<void> {
    const result = (event.result ?? {}) as Partial<AgentToolResult<unknown>>;
    const payload: RecordPayloads["tool_outcome"] = {
      callId: event.toolCallId,
      toolName: event.toolName,
      content: (result.content ?? []) as RecordPayloads["tool_outcome"]["content"],
      isError: event.isError,
    };
    if (result.details !== undefined) payload.data = result.details;
    await this.#write([this.#draft("tool_outcome", payload)]);
    this.#ctx.observe({
      type: "tool_call_ended",
      correlation: this.#correlation(),
      callId: event.toolCallId,
      toolName: event.toolName,
      isError: event.isError,
    });
  }

  /** Appends pending deltas (unless `flush` is false) then `drafts`, as one batch; failures become halts. */
  #write(drafts: RecordDraft[], flush = true): Promise<void> | undefined {
    // After an interruption, a store failure or a planned stop nothing more is recorded; after a
    // run failure the in-flight turn is still recorded truthfully.
    if (this.#halt !== undefined && this.#halt.kind !== "failed") return undefined;
    const pending = flush ? this.#batcher.take() : undefined;
    const batch = pending ? [this.#deltaDraft(pending), ...drafts] : drafts;
    if (batch.length === 0) return undefined;
    return this.#ctx.log.append(batch).then(
      () => {},
      (err: unknown) => this.#onStoreError(err),
    );
  }

  #onStoreError(err: unknown): void {
    if (isHarnessError(err, "claim_lost")) this.#stop({ kind: "interrupted" });
    else this.#stop({ kind: "transient", error: (isHarnessError(err, "store_failure") ? err : new StoreFailure(err)).message });
    this.#abortRun();
  }

  // ---- the log ----------------------------------------------------------------------------

  /** Delivers the inbox's messages of `kinds` (recorded by the store); failures become halts. */
  async #drain(kinds: InboxKind[]): Promise<ConversationRecord[]> {
    try {
      return await this.#ctx.log.drain(kinds);
    } catch (err) {
      this.#onStoreError(err);
      return [];
    }
  }

  // ---- drafts -----------------------------------------------------------------------------

  #draft<K extends RecordKind>(kind: K, payload: RecordPayloads[K], inTurn = true): RecordDraft {
    return this.#ctx.log.draft(kind, payload, inTurn ? this.#turnId : undefined);
  }

  #deltaDraft(batch: DeltaBatch): RecordDraft {
    return this.#draft(batch.kind, { text: batch.text });
  }

  #inputDraft(): RecordDraft {
    const input = this.#ctx.input;
    if (input.kind === "signal") {
      const payload: RecordPayloads["signal"] = { type: input.signal?.type ?? "signal", body: input.body };
      if (input.signal?.sender !== undefined) payload.sender = input.signal.sender;
      if (input.signal?.tag !== undefined) payload.tag = input.signal.tag;
      return this.#draft("signal", payload, false);
    }
    const payload: RecordPayloads["user_message"] = { body: input.body };
    if (input.attachments !== undefined && input.attachments.length > 0) payload.attachments = input.attachments;
    return this.#draft("user_message", payload, false);
  }

  /** Correlation ids of an event; `withTurn` adds the current turn's id (inside a turn). */
  #correlation(withTurn = true): Correlation {
    if (withTurn && this.#turnCorrelation !== undefined) return this.#turnCorrelation;
    const attempt = this.#ctx.log.correlation;
    if (!withTurn || this.#turnId === undefined) return attempt;
    return (this.#turnCorrelation = { ...attempt, turnId: this.#turnId });
  }

  // ---- model turns ------------------------------------------------------------------------

  /**
   * The agent's stream function: the turn interceptor boundary, a turn timeout, and an abort
   * that cannot wedge. The provider's stream is handed to the loop as is (no re-streaming per
   * event); on timeout or abort it is ended from outside with an error event, which also
   * releases a provider that ignores its signal.
   */
  readonly #streamFn: StreamFn = (model, context, options) => {
    const interceptors = this.#ctx.interceptors;
    if (interceptors.length === 0) return this.#openTurn(model, context, options);
    return new Promise<AssistantMessageEventStream>((handOff) => {
      let stream: AssistantMessageEventStream | undefined;
      const fail = (error: string) => {
        this.#stop({ kind: "failed", errorCode: "run_failed", error });
        if (stream) endStream(stream, model, this.#ctx.clock.now(), "error", error);
        else handOff(failedStream(model, this.#ctx.clock.now(), "error", error));
      };
      // The boundary spans the full round-trip: `next()` resolves once the response has ended.
      runInterceptors(interceptors, { kind: "turn", correlation: this.#correlation() }, async () => {
        stream = await this.#openTurn(model, context, options);
        handOff(stream);
        await stream.result();
      }).then(
        (ran) => {
          if (!ran) fail("model turn aborted by an interceptor");
        },
        (err) => fail(errorText(err)),
      );
    });
  };

  /** Calls the model with the turn's bound attached. Never rejects. */
  async #openTurn(
    model: Model<Api>,
    context: TranscriptContext,
    options: SimpleStreamOptions | undefined,
  ): Promise<AssistantMessageEventStream> {
    const { clock } = this.#ctx;
    if (options?.signal?.aborted) return failedStream(model, clock.now(), "aborted", "Request was aborted");
    let stream: AssistantMessageEventStream;
    try {
      stream = await this.#ctx.setup.streamFn(model, context, withStrictTurns(options));
    } catch (err) {
      // The StreamFn contract says "never throw"; a throw is a provider error.
      return failedStream(model, clock.now(), "error", errorText(err));
    }
    if (options?.signal?.aborted) {
      endStream(stream, model, clock.now(), "aborted", "Request was aborted");
      return stream;
    }
    this.#inFlight = stream;
    const limit = this.#budgets.turnTimeoutMs;
    const alarm = this.#alarm(limit, () => {
      this.#turnTimeout = `model turn timed out after ${formatDuration(limit)}`;
      endStream(stream, model, clock.now(), "error", this.#turnTimeout);
      // The run ends on this error anyway: aborting it tells the provider to stop.
      this.#agent?.abort();
    });
    stream.result().then(
      () => {
        this.#alarms.delete(alarm);
        if (this.#inFlight === stream) this.#inFlight = undefined;
      },
      () => {},
    );
    return stream;
  }

  // ---- tools ------------------------------------------------------------------------------

  #wrapTool(tool: AgentTool<any>): AgentTool<any> {
    return { ...tool, execute: (id, params, signal, onUpdate) => this.#runTool(tool, id, params, signal, onUpdate) };
  }

  /** One tool call inside its interceptor boundary. The tool's own failure stays a tool error. */
  async #runTool(
    tool: AgentTool<any>,
    id: string,
    params: unknown,
    signal: AbortSignal | undefined,
    onUpdate: AgentToolUpdateCallback<any> | undefined,
  ): Promise<AgentToolResult<any>> {
    if (this.#ctx.interceptors.length === 0) return this.#executeBounded(tool, id, params, signal, onUpdate);
    let result: AgentToolResult<any> | undefined;
    let toolFailed = false;
    let toolError: unknown;
    let ran: boolean;
    try {
      ran = await runInterceptors(
        this.#ctx.interceptors,
        { kind: "tool", correlation: this.#correlation(), toolName: tool.name, callId: id },
        async () => {
          try {
            result = await this.#executeBounded(tool, id, params, signal, onUpdate);
          } catch (err) {
            toolFailed = true;
            toolError = err;
            throw err;
          }
        },
      );
    } catch (err) {
      if (toolFailed && err === toolError) throw err; // pi turns it into an error result
      const error = `tool ${tool.name}: ${errorText(err)}`;
      this.#stop({ kind: "failed", errorCode: "run_failed", error });
      return errorResult(error);
    }
    if (!ran) {
      const error = `tool call ${tool.name} (${id}) aborted by an interceptor`;
      this.#stop({ kind: "failed", errorCode: "run_failed", error });
      return errorResult(error);
    }
    if (toolFailed) throw toolError; // an interceptor swallowed the tool's error
    return result!;
  }

  /** Runs the tool raced against abort and the tool timeout (a tool that ignores abort cannot wedge the run). */
  #executeBounded(
    tool: AgentTool<any>,
    id: string,
    params: unknown,
    signal: AbortSignal | undefined,
    onUpdate: AgentToolUpdateCallback<any> | undefined,
  ): Promise<AgentToolResult<any>> {
    if (signal?.aborted) return Promise.reject(new Error(TOOL_ABORTED));
    const limit = this.#budgets.toolTimeoutMs;
    // The signal the tool sees: aborted with the run (see #abortRun) or at its timeout.
    const toolAbort = new AbortController();
    return new Promise<AgentToolResult<any>>((resolve, reject) => {
      let settled = false;
      const settle = (action: () => void) => {
        if (settled) return;
        settled = true;
        this.#alarms.delete(alarm);
        this.#runningTools.delete(cancel);
        action();
      };
      const cancel = () => {
        toolAbort.abort(new Error(TOOL_ABORTED));
        settle(() => reject(new Error(TOOL_ABORTED)));
      };
      const alarm = this.#alarm(limit, () => {
        toolAbort.abort(new Error(`tool ${tool.name} timed out`));
        settle(() => resolve(errorResult(`tool ${tool.name} timed out after ${formatDuration(limit)}`)));
      });
      this.#runningTools.add(cancel);
      let running: Promise<AgentToolResult<any>>;
      try {
        running = Promise.resolve(tool.execute(id, params, toolAbort.signal, onUpdate));
      } catch (err) {
        running = Promise.reject(err);
      }
      running.then(
        (r) => settle(() => resolve(r)),
        (e) => settle(() => reject(e)),
      );
    });
  }
}

/** An assistant message that failed before any content. */
function errorMessageOf(model: Model<Api>, now: number, errorMessage: string, reason: "error" | "aborted" = "error"): AssistantMessage {
  return { ...emptyAssistantMessage(model, now, reason), errorMessage };
}

/** Ends a response from outside (timeout, abort); a no-op once it has ended. */
function endStream(
  stream: AssistantMessageEventStream,
  model: Model<Api>,
  now: number,
  reason: "error" | "aborted",
  errorMessage: string,
): void {
  const error = errorMessageOf(model, now, errorMessage, reason);
  stream.push({ type: "error", reason, error });
  stream.end(error);
}

/** A response that is nothing but an error. */
function failedStream(model: Model<Api>, now: number, reason: "error" | "aborted", errorMessage: string): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  endStream(stream, model, now, reason, errorMessage);
  return stream;
}
