import { Agent, type AgentTool, type AgentTurnContext, type AgentTurnDecision } from "@earendil-works/pi-agent-core";
import type { ConversationRecord, RecordBody } from "../protocol/records.ts";
import { errorText, isHarnessError, StoreFailure } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { FaultPhase } from "../ports/faults.ts";
import type { LogWriter } from "../ports/log-writer.ts";
import type { Correlation, HarnessEvent, Interceptor, Operation } from "../ports/observer.ts";
import type { Cancellation, DispatchMessage, InboxKind } from "../store/submission.ts";
import { agentBudgets, localToolsOf, type AgentBudgets, type AgentSetup } from "../agent/agent-setup.ts";
import { isMcpToolset } from "../agent/mcp-tools.ts";
import { Bounds } from "./bounds.ts";
import type { FlushPolicy } from "./delta-batcher.ts";
import { DriveCompaction } from "./drive-compaction.ts";
import { driveWithMcp } from "./mcp-drive.ts";
import { classifyLastAssistant, isFailedStop, isOverflow, operationError, timeoutOutcome, type DriveOutcome } from "./drive-outcome.ts";
import { runInterceptors } from "./interceptors.ts";
import { modelTurnStreamFn } from "./model-turn.ts";
import { projectPath, type AttachmentBytes } from "./projection.ts";
import { ProviderWatch } from "./provider-backpressure.ts";
import { rebuild } from "./rebuild.ts";
import { checkStructuredResult, correctiveMessage, DEFAULT_RESULT_RETRIES, resultInvalidError } from "./structured-result.ts";
import { submissionUsage } from "./submission-usage.ts";
import { boundedTool } from "./tool-call.ts";
import { lastAssistantText, needsModelCall } from "./transcript.ts";
import { TurnRecorder } from "./turn-recorder.ts";
import { TaskSuspension } from "./task-suspension.ts";
import { usedCallIds } from "./unique-call-ids.ts";
import type { TaskSpawner } from "./task-tool.ts";
import { CallSuspension } from "./call-suspension.ts";
import { boundScheduleMessageTool, isScheduleMessageTool, type ScheduleMessage } from "../agent/schedule-message-tool.ts";

export type { DriveOutcome } from "./drive-outcome.ts";

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
  /**
   * Aborted with a `Cancellation` as its reason when the submission is cancelled: stop at the
   * next safe point like a failed halt (the model stream is aborted, the in-flight turn is still
   * recorded) and return `failed` with the cancellation.
   */
  cancel?: AbortSignal;
  /** True → stop at the next point where the next step is a model call, and hand off. */
  shouldYield: () => boolean;
  /** Epoch ms: the durability deadline (createdAt + budget). */
  deadline: number;
  /** The fault seam (`ports/faults.ts`), bound to the submission; tests only. */
  faults?: (phase: FaultPhase) => void | Promise<void>;
  /** The `task` tool's spawner, when the subagent policy gives this submission one. */
  tasks?: TaskSpawner;
  /**
   * Closes a deferred call's callback whose `start` failed (its id then answers nothing): the
   * engine's guarded answer. Absent: the callback stays open until it expires.
   */
  closeCallback?: (callId: string, error: string) => Promise<void>;
  /** The engine's delayed dispatch for the `schedule_message` tool (to the submission's own session). */
  scheduleMessage?: ScheduleMessage;
  /**
   * An attachment's bytes by digest (undefined when the store no longer holds it): the drive
   * loads those of the path's user messages so the model sees images and text files.
   */
  attachments?: (digest: string) => Promise<Uint8Array | undefined>;
}

/**
 * Drives one claimed submission for one attempt: rebuilds the agent from the conversation log
 * (the log is the truth; every call starts from it, so calling again after a crash, a hand-off
 * or a refused settlement is safe), reconciles dangling tool calls, records the input once, runs
 * the pi agent and appends what happens through the attempt's log writer, delivers steer and
 * follow-up messages from the inbox at turn boundaries, validates a requested structured result,
 * and classifies how the run ended. Never throws for run outcomes.
 *
 * Compaction: before every model call a context past `contextWindow − reserveTokens` is compacted
 * first (reason `threshold`); a turn that overflows the window is compacted and retried (reason
 * `overflow`, at most {@link MAX_OVERFLOW_COMPACTIONS} per attempt), and an overflow that
 * compaction cannot cure settles `context_overflow` with the submission left out of later
 * projections. A `compact` submission only compacts (reason `manual`). The drive keeps the log it
 * read plus everything it appended, so a compaction re-reduces it locally and replaces the agent's
 * transcript without reading the log again. A settling outcome carries the submission's usage.
 *
 * The parts live beside it: `rebuild` (the starting point), `turn-recorder` (pi events → records
 * through the writer, with `agent-events` as the pure mapping), `drive-compaction` (the three
 * uses of compaction), `bounds` (turn and tool timeouts, abort), `model-turn` and `tool-call`
 * (the interceptor boundaries), `drive-outcome` (classification), `transcript` (reading the
 * agent's messages).
 */
export function drive(ctx: DriveContext): Promise<DriveOutcome> {
  const toolsets = (ctx.setup.tools ?? []).filter(isMcpToolset);
  if (toolsets.length === 0) return new SubmissionDrive(ctx).run();
  return driveWithMcp(ctx, toolsets, (resolved) => new SubmissionDrive(resolved).run());
}


class SubmissionDrive {
  readonly #ctx: DriveContext;
  readonly #budgets: AgentBudgets;
  readonly #bounds: Bounds;
  readonly #watch: ProviderWatch;
  /** The log as this attempt knows it: what it read, then everything it appended, in order. */
  readonly #records: ConversationRecord[] = [];
  readonly #compaction: DriveCompaction;
  /** Set once the rebuild says how many turns the run had. */
  #recorder: TurnRecorder | undefined;
  /** The pi agent (built from the setup and the log). */
  #agent: Agent | undefined;
  /** The first reason the run must stop (interrupted always wins). */
  #halt: DriveOutcome | undefined;
  /** Set when the current operation's model turn timed out (classified transient). */
  #turnTimeout: string | undefined;
  /** The `task` calls (subagents), when the submission has the tool. */
  readonly #tasks: TaskSuspension | undefined;
  /** Calls that wait for a person's approval or a callback (ADR 0025). */
  readonly #calls: CallSuspension;
  /** Bytes of the attachments on the path, loaded once per attempt. */
  readonly #attachments = new Map<string, Uint8Array>();

  constructor(ctx: DriveContext) {
    this.#ctx = ctx;
    this.#tasks = ctx.tasks && new TaskSuspension(ctx.tasks, ctx.log.correlation, () => [...ctx.log.earlier, ...this.#records], ctx.observe);
    const key = ctx.log.correlation.sessionKey;
    this.#calls = new CallSuspension({
      clock: ctx.clock,
      where: { agent: key.agent, instance: key.instance, session: key.session, submissionId: ctx.log.correlation.submissionId },
      deadline: ctx.deadline,
      approvalTimeoutMs: ctx.setup.approvalTimeoutMs ?? 0,
      record: (records) => this.#recorder!.recordNow(records),
      closeCallback: ctx.closeCallback ?? (async () => {}),
      observe: ctx.observe,
      correlation: () => this.#correlation(),
    });
    this.#budgets = agentBudgets(ctx.setup);
    this.#bounds = new Bounds(ctx.clock, this.#budgets);
    this.#watch = new ProviderWatch(ctx.clock);
    this.#compaction = new DriveCompaction({
      setup: ctx.setup,
      observe: ctx.observe,
      interceptors: ctx.interceptors,
      signal: ctx.signal,
      records: this.#records,
      append: (records) => this.#append(records, false),
      correlation: () => this.#correlation(false),
      halted: () => this.#halt,
      stop: (outcome) => this.#stop(outcome),
      onStoreError: (err) => this.#onStoreError(err),
      abortRun: () => this.#abortRun(),
      attachments: () => this.#attachments,
      replaceTranscript: (messages) => {
        if (this.#agent) this.#agent.state.messages = messages;
      },
    });
  }

  async run(): Promise<DriveOutcome> {
    const { signal } = this.#ctx;
    if (signal.aborted) return { kind: "interrupted" };
    const onAbort = () => {
      this.#stop({ kind: "interrupted" });
      this.#abortRun();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const cancel = this.#ctx.cancel;
    const onCancel = () => {
      const { errorCode, error } = cancel!.reason as Cancellation;
      this.#stop({ kind: "failed", errorCode, error });
      this.#abortRun();
    };
    if (cancel?.aborted) onCancel();
    else cancel?.addEventListener("abort", onCancel, { once: true });
    try {
      return this.#withUsage(await this.#runLoop());
    } catch (err) {
      if (this.#halt) return this.#withUsage(this.#halt);
      if (signal.aborted || isHarnessError(err, "claim_lost")) return { kind: "interrupted" };
      if (isHarnessError(err, "store_failure")) return { kind: "transient", error: err.message };
      return this.#withUsage({ kind: "failed", errorCode: "run_failed", error: errorText(err) });
    } finally {
      signal.removeEventListener("abort", onAbort);
      cancel?.removeEventListener("abort", onCancel);
      this.#bounds.dispose();
    }
  }

  /**
   * Stops the run promptly: aborts the agent, ends the in-flight model response and releases
   * running tool calls. Only this drive aborts its agent, so this is the one place that needs to.
   */
  #abortRun(): void {
    this.#agent?.abort();
    this.#bounds.abort();
  }

  // ---- the loop ----------------------------------------------------------------------------

  async #runLoop(): Promise<DriveOutcome> {
    const { log, setup, input } = this.#ctx;
    const { submissionId, conversationId } = log.correlation;
    for (const record of await log.read()) this.#records.push(record);
    const start = rebuild(this.#records, submissionId, input, log.earlier);
    const pendingTasks = (await this.#tasks?.keepPending(start)) ?? [];
    if (this.#halt) return this.#halt;
    const calls = this.#calls.keepPending(start, [...log.earlier, ...this.#records], submissionId);
    const { clock, observe, faults, flushPolicy } = this.#ctx;
    const recorder = new TurnRecorder(
      {
        log,
        clock,
        flushPolicy,
        observe,
        faults,
        modelId: setup.model.id,
        records: this.#records,
        halted: () => this.#halt,
        onStoreError: (err) => this.#onStoreError(err),
        rewrite: (event, effects) => {
          this.#tasks?.rewrite(event, effects);
          this.#calls.rewrite(event, effects);
        },
      },
      start.turns,
    );
    this.#recorder = recorder;
    let corrections = start.corrections;
    // (An empty log lacks its first record, the admission's append of it failed: the writer
    // writes it first.)
    let path = start.missing.length > 0 ? start.path.concat(await this.#append(start.missing, false)) : start.path;
    if (start.dangling.length > 0) {
      this.#ctx.observe({
        type: "recovery",
        correlation: this.#correlation(false),
        decision: "dangling_tool_call_reconciled",
        detail: `synthesized ${start.dangling.length} error tool_outcome record(s) for interrupted tool call(s): ${start.dangling.map((d) => d.callId).join(", ")}`,
      });
    }
    // Parked again (a crash before the park): the calls still wait for children, decisions, callbacks.
    const pending = [...pendingTasks.map((callId) => ({ kind: "child" as const, callId })), ...calls.pending];
    if (pending.length > 0) return { kind: "waiting", entries: pending };
    if (input.kind === "compact") {
      const compacted = await this.#compaction.manual(submissionId, log.earlier);
      if (compacted.kind !== "completed") return compacted;
      // A steer or follow-up accepted while the compaction ran has no turn to join: it is recorded
      // after the compaction (the session's next exchange sees it). Left in the inbox, the
      // settlement would refuse and re-run this attempt without end.
      await this.#drain(["steer", "followUp"]);
      return this.#halt ?? compacted;
    }
    await this.#loadAttachments(path);

    const turnContext = {
      clock: this.#ctx.clock,
      bounds: this.#bounds,
      interceptors: this.#ctx.interceptors,
      correlation: () => this.#correlation(),
      fail: (error: string) => this.#stop({ kind: "failed", errorCode: "run_failed", error }),
      faults: this.#ctx.faults,
    };
    const bound = (tool: AgentTool<any>) => boundedTool(tool, turnContext);
    const schedule = this.#ctx.scheduleMessage;
    // MCP toolsets were resolved into tools before this drive was made (driveWithMcp).
    const setupTools = localToolsOf(setup);
    const own = setupTools.map((tool) =>
      schedule && isScheduleMessageTool(tool as AgentTool<any>) ? boundScheduleMessageTool(tool as AgentTool<any>, schedule, () => this.#ctx.clock.now()) : tool,
    );
    // A `task` call is held to its end: released mid-admission, its child would be admitted with
    // no `task_spawned` naming it (the run's cancel or stop must not orphan it).
    const tasks = this.#tasks ? [boundedTool(this.#tasks.tool((err) => this.#onStoreError(err)), turnContext, { hold: true })] : [];
    const tools = [...this.#calls.wrap(own, bound), ...tasks];
    // Approved calls run now, once each, before the model goes on (their outcomes are in its context).
    if (calls.approved.length > 0) {
      path = path.concat(await this.#calls.runApproved(calls.approved, this.#ctx.signal));
      if (this.#halt) return this.#halt;
    }
    const agent = new Agent({
      initialState: {
        model: setup.model,
        thinkingLevel: setup.thinkingLevel ?? "off",
        tools,
        messages: projectPath(path, { systemPrompt: setup.systemPrompt, tools: setupTools, attachments: this.#attachments }).messages,
      },
      streamFn: modelTurnStreamFn({
        ...turnContext,
        streamFn: setup.streamFn,
        watch: this.#watch,
        onTimeout: (error) => (this.#turnTimeout = error),
        stopModel: () => this.#agent?.abort(),
        usedCallIds: () => usedCallIds([...log.earlier, ...this.#records]),
        onRenamed: (renames) =>
          this.#ctx.observe({
            type: "recovery",
            correlation: this.#correlation(),
            decision: "call_id_renamed",
            detail: `the provider repeated call id(s) the conversation had used: ${renames.map((r) => `${r.from} → ${r.to}`).join(", ")}`,
          }),
      }),
      finishTurn: (turn) => this.#finishTurn(turn),
      prepareRequest: (request) => this.#compaction.beforeRequest(request),
      steeringMode: "all",
      followUpMode: "all",
      sessionId: conversationId,
    });
    this.#agent = agent;
    agent.subscribe((event) => recorder.onEvent(event));
    if (this.#halt) return this.#halt;

    let operation: Operation = this.#ctx.resume ? "resume" : "prompt";
    // A transcript ending in a user message or tool results means the next step is a model call;
    // one ending in a completed assistant means the run had finished (only the inbox may remain).
    // The input is never prompted again: it is in the log, so `continue()` picks it up.
    let runModel = needsModelCall(agent.state.messages);
    for (;;) {
      if (runModel) {
        if (this.#ctx.clock.now() > this.#ctx.deadline) return timeoutOutcome(this.#budgets.submissionTimeoutMs);
        const outcome = await this.#operate(operation, () => agent.continue());
        operation = "prompt";
        if (isOverflow(outcome) && this.#halt === undefined) {
          // Compact and retry the turn (its input is in the log: `continue()` picks it up).
          const final = await this.#compaction.recoverOverflow(outcome);
          if (final) return final;
          continue;
        }
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
      // The structured-result loop: a result that does not validate gets a corrective turn.
      const schema = input.resultSchema;
      if (schema === undefined) return { kind: "completed" };
      const verdict = await checkStructuredResult(lastAssistantText(agent.state.messages), schema);
      if (verdict.ok) return { kind: "completed", result: verdict.value };
      if (corrections >= (input.resultRetries || DEFAULT_RESULT_RETRIES)) {
        return { kind: "failed", errorCode: "result_schema_invalid", error: resultInvalidError(verdict.reason) };
      }
      const correction: RecordBody = { kind: "user_message", payload: { body: correctiveMessage(verdict.reason, schema), origin: "correction" } };
      this.#inject(await this.#append([correction], false));
      corrections++;
      runModel = true;
      if (this.#ctx.shouldYield()) return { kind: "continuation" };
    }
  }

  /** One session operation (a `continue()` of the agent) inside its interceptor boundary. */
  async #operate(operation: Operation, start: () => Promise<void>): Promise<DriveOutcome | undefined> {
    if (this.#halt) return this.#halt; // stopped while the last step was being recorded
    const correlation = this.#correlation(false);
    this.#ctx.observe({ type: "operation_started", correlation, operation });
    this.#recorder!.lastAssistant = undefined;
    this.#turnTimeout = undefined;
    try {
      const ran = await runInterceptors(this.#ctx.interceptors, { kind: "operation", correlation, operation }, start);
      if (!ran) this.#stop({ kind: "failed", errorCode: "run_failed", error: `${operation} operation aborted by an interceptor` });
    } catch (err) {
      this.#stop({ kind: "failed", errorCode: "run_failed", error: errorText(err) });
    }
    const outcome =
      this.#halt ??
      classifyLastAssistant(this.#recorder!.lastAssistant, {
        turnTimeout: this.#turnTimeout,
        contextWindow: this.#ctx.setup.model.contextWindow,
        exchange: this.#watch.last,
      });
    this.#ctx.observe({ type: "operation_ended", correlation, operation, error: operationError(outcome) });
    return outcome;
  }

  /** A settling outcome with what the submission consumed, every attempt and compaction included. */
  #withUsage(outcome: DriveOutcome): DriveOutcome {
    if (outcome.kind !== "completed" && outcome.kind !== "failed") return outcome;
    // The submission's records a checkpoint keeps off its path count too (ADR 0018).
    const own = [...this.#ctx.log.earlier, ...this.#records];
    return { ...outcome, usage: submissionUsage(own, this.#ctx.log.correlation.submissionId) };
  }

  /**
   * Loads the bytes of every attachment the path's user messages reference (a few at a time). An
   * attachment the store no longer holds is left out (the model reads a note); a store failure
   * becomes the drive's halt like any other.
   */
  async #loadAttachments(path: readonly ConversationRecord[]): Promise<void> {
    const load = this.#ctx.attachments;
    if (load === undefined) return;
    const digests = new Set<string>();
    for (const record of path) {
      if (record.kind !== "user_message") continue;
      for (const ref of record.payload.attachments ?? []) if (!this.#attachments.has(ref.digest)) digests.add(ref.digest);
    }
    const queue = [...digests];
    const worker = async () => {
      for (let digest = queue.shift(); digest !== undefined; digest = queue.shift()) {
        const data = await load(digest);
        if (data !== undefined) this.#attachments.set(digest, data);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(4, queue.length) }, worker));
    } catch (err) {
      this.#onStoreError(err);
    }
  }

  /** Records the first stop reason; an interruption overrides any other. */
  #stop(outcome: DriveOutcome): void {
    if (this.#halt === undefined || outcome.kind === "interrupted") this.#halt = outcome;
  }

  /** Queues recorded user messages for the agent, exactly as a rebuild would project them. */
  #inject(records: readonly ConversationRecord[]): void {
    for (const message of projectPath(records).messages) this.#agent!.steer(message);
  }

  /** The turn boundary: the deadline, steers that arrived during the turn, a planned hand-off. */
  async #finishTurn(turn: AgentTurnContext): Promise<AgentTurnDecision | undefined> {
    if (this.#halt) return { action: "end" };
    if (isFailedStop(turn.message)) return undefined; // pi ends the run itself
    const spawned = this.#tasks?.takeTurn() ?? [];
    const asked = this.#calls.takeTurn();
    if (spawned.length > 0 || asked.length > 0) {
      // Suspended on its children, decisions and callbacks: the engine parks it.
      this.#stop({ kind: "waiting", entries: [...spawned.map((callId) => ({ kind: "child" as const, callId })), ...asked] });
      return { action: "end" };
    }
    if (this.#ctx.clock.now() > this.#ctx.deadline) {
      this.#stop(timeoutOutcome(this.#budgets.submissionTimeoutMs));
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

  // ---- the log -----------------------------------------------------------------------------

  /** Appends `records` through the attempt's recorder (the local log follows). */
  #append(records: readonly RecordBody[], inTurn = true): Promise<ConversationRecord[]> {
    return this.#recorder!.append(records, inTurn);
  }

  /** Delivers the inbox's messages of `kinds` (recorded by the store); failures become halts. */
  async #drain(kinds: InboxKind[]): Promise<ConversationRecord[]> {
    try {
      const drained = await this.#ctx.log.drain(kinds);
      this.#records.push(...drained);
      return drained;
    } catch (err) {
      this.#onStoreError(err);
      return [];
    }
  }

  #onStoreError(err: unknown): void {
    if (isHarnessError(err, "claim_lost")) this.#stop({ kind: "interrupted" });
    else this.#stop({ kind: "transient", error: (isHarnessError(err, "store_failure") ? err : new StoreFailure(err)).message });
    this.#abortRun();
  }

  /** Correlation ids of an event; `withTurn` adds the current turn's id (inside a turn). */
  #correlation(withTurn = true): Correlation {
    return this.#recorder?.correlation(withTurn) ?? this.#ctx.log.correlation;
  }
}
