import { type AgentEvent, type AgentTool, type AgentToolResult, runToolCall } from "@earendil-works/pi-agent-core";
import type { AssistantMessage } from "@earendil-works/pi-ai";
import type { ApprovalRequestedPayload, AssistantToolCallPayload, ConversationRecord, RecordBody, RecordPayloads } from "../protocol/records.ts";
import { callbackDigest, callbackPath, newCallbackId } from "../conversation/callback-id.ts";
import { errorText } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { Correlation, HarnessEvent } from "../ports/observer.ts";
import type { WaitEntry } from "../store/submission.ts";
import type { EventEffects } from "./agent-events.ts";
import { DEFAULT_APPROVAL_TIMEOUT_MS, DEFAULT_CALLBACK_TIMEOUT_MS } from "../agent/agent-setup.ts";
import { type ApprovalContext, deferredOf, type HarnessTool } from "../agent/define-tool.ts";
import type { Rebuilt } from "./rebuild.ts";

/** What the drive lends its call waits. */
export interface CallSuspensionHost {
  clock: Clock;
  /** Where the calls are made (`needsApproval`'s context). */
  where: Omit<ApprovalContext, "callId" | "toolName">;
  /** Epoch ms: the submission's budget; no call waits past it. */
  deadline: number;
  /** The setup's `approvalTimeoutMs` (0: the default). */
  approvalTimeoutMs: number;
  /** Appends `records` in log order with the turn's other writes: the stored records once durable, undefined when the run stopped. */
  record(records: RecordBody[]): Promise<ConversationRecord[] | undefined>;
  /** Closes a callback whose `start` failed, so its id answers nothing (the engine's `answerCall`). */
  closeCallback(callId: string, error: string): Promise<void>;
  observe(e: HarnessEvent): void;
  correlation(): Correlation;
}

/** `details` of the result of a call that asked approval instead of running. */
interface ApprovalAsked {
  approvalRequested: ApprovalRequestedPayload;
}

/** `details` of the result of a deferred call whose `start` ran: the call waits for its callback. */
interface CallbackAsked {
  callbackStarted: { callId: string; toolName: string; expiresAt: number };
}

/**
 * A drive's calls that wait for the outside world (ADR 0025): calls of tools that need approval
 * and calls of deferred tools. Like `task` calls (`TaskSuspension`), such a call records no
 * `tool_outcome` in its turn: an approval's call records `approval_requested` (the tool does not
 * run), a deferred call records `callback_started` before its `start` runs; the turn ends the run
 * after its tool batch and the engine parks the submission with the calls as wait entries. On
 * resume an approved call runs here, once (`tool_started` first), before the model goes on.
 */
export class CallSuspension {
  readonly #host: CallSuspensionHost;
  /** Names of the tools this drive wraps (only their results are looked at). */
  readonly #gated = new Set<string>();
  readonly #deferred = new Set<string>();
  /** Every tool, bounded, without the approval gate: what an approved call runs through. */
  #runnable: AgentTool<any>[] = [];
  /** The entries the current turn's calls made. */
  #turn: WaitEntry[] = [];

  constructor(host: CallSuspensionHost) {
    this.#host = host;
  }

  /**
   * The tools as the agent runs them. `bound` wraps a tool in the drive's bounds and interceptors:
   * an approval's gate stays outside it (the decision is not a tool call), a deferred tool's
   * `start` runs inside it.
   */
  wrap(tools: readonly HarnessTool<any>[], bound: (tool: AgentTool<any>) => AgentTool<any>): AgentTool<any>[] {
    this.#runnable = [];
    return tools.map((tool) => {
      const deferred = deferredOf(tool);
      if (deferred !== undefined) {
        this.#deferred.add(tool.name);
        return bound({ ...tool, execute: (callId, params, signal) => this.#start(tool, deferred, callId, params, signal) });
      }
      // Not deferred: the setup's check saw its `execute`.
      const inner = bound(tool as AgentTool<any>);
      this.#runnable.push(inner);
      if (tool.needsApproval === undefined || tool.needsApproval === false) return inner;
      this.#gated.add(tool.name);
      return { ...inner, execute: (callId, params, signal, onUpdate) => this.#gate(tool, inner, callId, params, signal, onUpdate) };
    });
  }

  /** An approval's gate: runs the call when it needs none, else asks (nothing runs). */
  async #gate(
    tool: HarnessTool<any>,
    inner: AgentTool<any>,
    callId: string,
    params: unknown,
    signal: AbortSignal | undefined,
    onUpdate: Parameters<AgentTool<any>["execute"]>[3],
  ): Promise<AgentToolResult<unknown>> {
    const host = this.#host;
    let needs: boolean;
    try {
      const rule = tool.needsApproval;
      needs = typeof rule === "function" ? Boolean(await rule(params, { ...host.where, callId, toolName: tool.name })) : rule === true;
    } catch (err) {
      // Fail closed: a rule that cannot decide does not let the call run.
      throw new Error(`${tool.name}: needsApproval failed, so the call was not run: ${errorText(err)}`);
    }
    if (!needs) return inner.execute(callId, params, signal, onUpdate);
    const timeout = tool.approvalTimeoutMs || host.approvalTimeoutMs || DEFAULT_APPROVAL_TIMEOUT_MS;
    const expiresAt = Math.min(host.clock.now() + timeout, host.deadline);
    const approvalRequested: ApprovalRequestedPayload = {
      callId,
      toolName: tool.name,
      approvalId: `${host.where.submissionId}/${callId}`,
      expiresAt: new Date(expiresAt).toISOString(),
    };
    if (params !== undefined) approvalRequested.args = params;
    const details: ApprovalAsked = { approvalRequested };
    return { content: [{ type: "text", text: `${tool.name}: waiting for approval` }], details };
  }

  /** A deferred call: its record first (durable), then `start` once. */
  async #start(
    tool: HarnessTool<any>,
    deferred: NonNullable<ReturnType<typeof deferredOf>>,
    callId: string,
    params: unknown,
    signal: AbortSignal | undefined,
  ): Promise<AgentToolResult<unknown>> {
    const host = this.#host;
    const callbackId = newCallbackId();
    const expiresAt = Math.min(host.clock.now() + (deferred.callbackTimeoutMs || DEFAULT_CALLBACK_TIMEOUT_MS), host.deadline);
    const started: RecordPayloads["callback_started"] = {
      callId,
      toolName: tool.name,
      expiresAt: new Date(expiresAt).toISOString(),
      callbackDigest: callbackDigest(callbackId),
    };
    // Durable before `start` hands the id out: a re-executed call finds it and never starts again.
    if (!(await host.record([{ kind: "callback_started", payload: started }])) || signal?.aborted) {
      throw new Error(`${tool.name}: the run stopped before the callback was started`);
    }
    host.observe({ type: "callback_started", correlation: host.correlation(), callId, toolName: tool.name, expiresAt });
    try {
      await deferred.start(params as never, { callbackId, callbackPath: callbackPath(callbackId), callId, ...(signal ? { signal } : {}) });
    } catch (err) {
      // Its id answers nothing from now on; the model reads the failure as the call's outcome.
      await host.closeCallback(callId, `start failed: ${errorText(err)}`).catch(() => {});
      throw err;
    }
    const details: CallbackAsked = { callbackStarted: { callId, toolName: tool.name, expiresAt } };
    return { content: [{ type: "text", text: `${tool.name}: waiting for its callback` }], details };
  }

  /**
   * A call that asked approval records `approval_requested` instead of its `tool_outcome`; a
   * deferred call whose `start` ran records nothing more (its `callback_started` is written). Either
   * joins the turn's wait entries.
   */
  rewrite(event: AgentEvent, effects: EventEffects): void {
    if (event.type !== "tool_execution_end" || event.isError) return;
    const details = (event.result as { details?: Partial<ApprovalAsked & CallbackAsked> } | undefined)?.details;
    if (this.#gated.has(event.toolName) && details?.approvalRequested) {
      const asked = details.approvalRequested;
      this.#turn.push({ kind: "approval", callId: asked.callId, toolName: asked.toolName, expiresAt: Date.parse(asked.expiresAt) });
      effects.records = [{ kind: "approval_requested", payload: asked }];
      effects.observeAfter = [
        ...(effects.observeAfter ?? []),
        { type: "approval_requested", correlation: this.#host.correlation(), callId: asked.callId, toolName: asked.toolName, approvalId: asked.approvalId, expiresAt: Date.parse(asked.expiresAt) },
      ];
    } else if (this.#deferred.has(event.toolName) && details?.callbackStarted) {
      const { callId, toolName, expiresAt } = details.callbackStarted;
      this.#turn.push({ kind: "callback", callId, toolName, expiresAt });
      effects.records = [];
    }
  }

  /** The entries the turn just finished made (and forgets them). */
  takeTurn(): WaitEntry[] {
    const entries = this.#turn;
    this.#turn = [];
    return entries;
  }

  /**
   * At the start of a drive, this submission's unanswered calls that wait: a call that asked
   * approval and has no decision yet, or a deferred call whose callback has not answered (a crash
   * between their record and the park), stays pending; an approved call that never started is
   * returned to run. Both are taken out of `start`'s dangling calls and missing outcomes. An
   * approved call that started (`tool_started`) and has no outcome stays dangling: it was
   * interrupted while it ran and is never run again.
   */
  keepPending(start: Rebuilt, records: readonly ConversationRecord[], submissionId: string): { pending: WaitEntry[]; approved: AssistantToolCallPayload[] } {
    const asked = new Map<string, ApprovalRequestedPayload>();
    const decided = new Map<string, boolean>();
    const callbacks = new Map<string, RecordPayloads["callback_started"]>();
    const started = new Set<string>();
    for (const r of records) {
      if (r.submissionId !== submissionId) continue;
      if (r.kind === "approval_requested") asked.set(r.payload.callId, r.payload);
      else if (r.kind === "approval_decided") decided.set(r.payload.callId, r.payload.approved);
      else if (r.kind === "callback_started") callbacks.set(r.payload.callId, r.payload);
      else if (r.kind === "tool_started") started.add(r.payload.callId);
    }
    const pending: WaitEntry[] = [];
    const approved: AssistantToolCallPayload[] = [];
    const handled = new Set<string>();
    for (const call of start.dangling) {
      const request = asked.get(call.callId);
      const callback = callbacks.get(call.callId);
      if (request !== undefined && !decided.has(call.callId)) {
        pending.push({ kind: "approval", callId: call.callId, toolName: request.toolName, expiresAt: Date.parse(request.expiresAt) });
      } else if (request !== undefined && decided.get(call.callId) === true && !started.has(call.callId)) {
        approved.push(call);
      } else if (callback !== undefined) {
        pending.push({ kind: "callback", callId: call.callId, toolName: callback.toolName, expiresAt: Date.parse(callback.expiresAt) });
      } else continue;
      handled.add(call.callId);
    }
    if (handled.size > 0) {
      start.dangling = start.dangling.filter((d) => !handled.has(d.callId));
      start.missing = start.missing.filter((m) => !(m.kind === "tool_outcome" && handled.has(m.payload.callId)));
    }
    return { pending, approved };
  }

  /**
   * Runs approved calls, in order, each once: `tool_started`, then the tool (validated and bounded
   * like a call of the model's, through the drive's bounded tools without the gate: `wrap` first),
   * then its `tool_outcome`. Stops when a record cannot be written (the run stopped).
   */
  async runApproved(calls: readonly AssistantToolCallPayload[], signal: AbortSignal): Promise<ConversationRecord[]> {
    const host = this.#host;
    const tools = this.#runnable;
    const appended: ConversationRecord[] = [];
    for (const call of calls) {
      const marker = await host.record([{ kind: "tool_started", payload: { callId: call.callId, toolName: call.toolName } }]);
      if (!marker) return appended;
      appended.push(...marker);
      const correlation = host.correlation();
      host.observe({ type: "tool_call_started", correlation, callId: call.callId, toolName: call.toolName });
      const outcome = await runToolCall(
        { type: "toolCall", id: call.callId, name: call.toolName, arguments: (call.args ?? {}) as never },
        {
          tools,
          assistantMessage: {} as AssistantMessage,
          context: { messages: [] },
          signal,
          // Partial results reach observers as in a model turn (a shell's output while it runs).
          onUpdate: (partial) => host.observe({ type: "tool_call_updated", correlation, callId: call.callId, toolName: call.toolName, result: partial }),
        },
      );
      const result = outcome.result as Partial<AgentToolResult<unknown>>;
      const payload: RecordPayloads["tool_outcome"] = {
        callId: call.callId,
        toolName: call.toolName,
        content: (result.content ?? []) as RecordPayloads["tool_outcome"]["content"],
        isError: outcome.isError,
      };
      if (result.details !== undefined) payload.data = result.details;
      const recorded = await host.record([{ kind: "tool_outcome", payload }]);
      if (!recorded) return appended;
      appended.push(...recorded);
      host.observe({ type: "tool_call_ended", correlation, callId: call.callId, toolName: call.toolName, isError: outcome.isError });
    }
    return appended;
  }
}
