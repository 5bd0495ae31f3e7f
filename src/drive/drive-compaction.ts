import type { AgentRequestUpdate, PrepareRequestContext } from "@earendil-works/pi-agent-core";
import type { Message } from "@earendil-works/pi-ai";
import type { CompactionPayload, ConversationRecord, RecordBody } from "../protocol/records.ts";
import { activeLeafPath, reduce } from "../conversation/reducer.ts";
import { isHarnessError } from "../errors.ts";
import type { Correlation, HarnessEvent, Interceptor } from "../ports/observer.ts";
import { localToolsOf, type AgentSetup } from "../agent/agent-setup.ts";
import type { CompactionReason } from "./compaction-plan.ts";
import {
  compactionFailure,
  compactionPayload,
  compactionSettings,
  MAX_OVERFLOW_COMPACTIONS,
  passesThreshold,
  planFor,
  type CompactionSettings,
} from "./compaction.ts";
import { operationError, type DriveOutcome } from "./drive-outcome.ts";
import { runInterceptors } from "./interceptors.ts";
import { projectPath, type AttachmentBytes } from "./projection.ts";

/** What a drive lends its compaction: the attempt's local log, its writer and its halt. */
export interface CompactionHost {
  readonly setup: AgentSetup;
  readonly observe: (e: HarnessEvent) => void;
  readonly interceptors: Interceptor[];
  /** Aborted on shutdown or lease loss: the summarizer's request is ended with it. */
  readonly signal: AbortSignal;
  /** The log as the attempt knows it (what it read, then everything it appended). */
  readonly records: readonly ConversationRecord[];
  /** Appends outside any turn; the local log follows. Throws the writer's errors. */
  append(records: readonly RecordBody[]): Promise<ConversationRecord[]>;
  /** The attempt's correlation (outside a turn). */
  correlation(): Correlation;
  /** The attachment bytes the drive loaded (the rebuilt transcript shows them as the first did). */
  attachments?(): AttachmentBytes;
  /** The drive's first stop reason, if it has one. */
  halted(): DriveOutcome | undefined;
  stop(outcome: DriveOutcome): void;
  /** A failed write: becomes the drive's halt and stops the run. */
  onStoreError(err: unknown): void;
  /** Stops the run promptly (the agent and its bounds). */
  abortRun(): void;
  /** Replaces the running agent's transcript with a compacted projection. */
  replaceTranscript(messages: Message[]): void;
}

/**
 * The drive's three uses of compaction (see `drive`): before a model call past the threshold,
 * after a turn that overflowed, and a `compact` submission. Each compaction is the session
 * operation `compact`: plan over the local log's active path, summarize, append the `compaction`
 * record through the attempt's writer, re-reduce locally and replace the agent's transcript,
 * without reading the log again.
 */
export class DriveCompaction {
  readonly #host: CompactionHost;
  readonly #settings: CompactionSettings;
  /** Overflow compactions made by this attempt. */
  #overflowCompactions = 0;

  constructor(host: CompactionHost) {
    this.#host = host;
    this.#settings = compactionSettings(host.setup);
  }

  /** pi's `prepareRequest`: a context past the threshold is compacted before the call. */
  async beforeRequest(request: PrepareRequestContext): Promise<AgentRequestUpdate | undefined> {
    const host = this.#host;
    if (host.halted()) return undefined;
    const messages = request.context.messages as Message[];
    if (!passesThreshold(messages, host.setup.model.contextWindow, this.#settings.reserveTokens)) return undefined;
    const compacted = await this.#compact("threshold");
    if (host.halted()) {
      host.abortRun();
      return undefined;
    }
    return compacted ? { context: { ...request.context, messages: compacted.messages } } : undefined;
  }

  /**
   * After a turn overflowed: compacts so the turn can be retried (undefined), or the outcome to
   * settle with when compaction cannot cure it.
   */
  async recoverOverflow(overflow: Extract<DriveOutcome, { kind: "failed" }>): Promise<DriveOutcome | undefined> {
    const host = this.#host;
    // The submission's own messages are what no longer fits: leave them out of later
    // projections, so the session's next submission does not overflow on them too.
    const settle = (error: string): DriveOutcome => ({ kind: "failed", errorCode: "context_overflow", error, excludedFromContext: true });
    if (this.#overflowCompactions >= MAX_OVERFLOW_COMPACTIONS) {
      return settle(`context overflow persisted after ${MAX_OVERFLOW_COMPACTIONS} compactions: ${overflow.error}`);
    }
    this.#overflowCompactions++;
    host.observe({
      type: "recovery",
      correlation: host.correlation(),
      decision: "overflow_compact_retry",
      detail: `context overflow, compacting and retrying the turn: ${overflow.error}`,
    });
    const compacted = await this.#compact("overflow");
    const halt = host.halted();
    if (halt) return halt;
    if (compacted === undefined) return settle(`context overflow with nothing left to compact: ${overflow.error}`);
    return undefined;
  }

  /**
   * A `compact` submission: one manual compaction (once per submission, whatever the attempts).
   * `earlier`: the submission's records a checkpoint keeps off the local log's path (ADR 0018).
   */
  async manual(submissionId: string, earlier: readonly ConversationRecord[] = []): Promise<DriveOutcome> {
    const host = this.#host;
    const own = (r: ConversationRecord) => r.kind === "compaction" && r.submissionId === submissionId;
    let done = (earlier.find(own) ?? host.records.find(own))?.payload as CompactionPayload | undefined;
    if (done === undefined) {
      done = (await this.#compact("manual"))?.payload;
      const halt = host.halted();
      if (halt) return halt;
    }
    return { kind: "completed", result: done === undefined ? { compacted: false } : { compacted: true, firstKeptEntryId: done.firstKeptEntryId } };
  }

  /** One compaction; undefined when there was nothing to compact, or it failed (the halt says how). */
  async #compact(reason: CompactionReason): Promise<{ messages: Message[]; payload: CompactionPayload } | undefined> {
    const host = this.#host;
    const plan = planFor(activeLeafPath(reduce(host.records)), this.#settings);
    if (plan === undefined) return undefined;
    const correlation = host.correlation();
    host.observe({ type: "operation_started", correlation, operation: "compact" });
    let payload: CompactionPayload | undefined;
    try {
      const ran = await runInterceptors(host.interceptors, { kind: "operation", correlation, operation: "compact" }, async () => {
        const summarized = await compactionPayload(plan, reason, this.#settings, host.signal);
        await host.append([{ kind: "compaction", payload: summarized }]);
        payload = summarized;
      });
      if (!ran) host.stop({ kind: "failed", errorCode: "run_failed", error: "compact operation aborted by an interceptor" });
    } catch (err) {
      if (isHarnessError(err, "claim_lost") || isHarnessError(err, "store_failure")) host.onStoreError(err);
      else host.stop(compactionFailure(err));
    }
    if (payload === undefined || host.halted()) {
      host.observe({ type: "operation_ended", correlation, operation: "compact", error: operationError(host.halted()) });
      return undefined;
    }
    const { systemPrompt } = host.setup;
    const tools = localToolsOf(host.setup);
    const messages = projectPath(activeLeafPath(reduce(host.records)), { systemPrompt, tools, attachments: host.attachments?.() }).messages;
    host.replaceTranscript(messages);
    host.observe({
      type: "compaction",
      correlation,
      reason,
      firstKeptEntryId: plan.firstKeptEntryId,
      summarizedTokens: plan.summarizedTokens,
      keptTokens: plan.keptTokens,
    });
    host.observe({ type: "operation_ended", correlation, operation: "compact", error: "" });
    return { messages, payload };
  }
}
