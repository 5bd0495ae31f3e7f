import type { Message, Usage } from "@earendil-works/pi-ai";
import { estimateContextTokens } from "@earendil-works/pi-ai/utils/estimate";
import type { CompactionPayload, ConversationRecord } from "../protocol/records.ts";
import type { AgentSetup, Api, Model, StreamFn } from "../agent/agent-setup.ts";
import { errorText } from "../errors.ts";
import { DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS, planCompaction, type CompactionPlan, type CompactionReason } from "./compaction-plan.ts";
import type { DriveOutcome } from "./drive-outcome.ts";
import { summarize, SummarizationError } from "./summarizer.ts";

/** Overflow compactions one attempt may make before the overflow is final (the spec's constant). */
export const MAX_OVERFLOW_COMPACTIONS = 2;

/** A setup's compaction knobs with the defaults applied. */
export interface CompactionSettings {
  keepRecentTokens: number;
  reserveTokens: number;
  /** The summarizer's model and provider (the agent's own unless the setup names another). */
  model: Model<Api>;
  streamFn: StreamFn;
}

/**
 * Applies the defaults to `setup.compaction` (0 or absent → default). The default reserve is at
 * most a quarter of a small model's window, so a small window is not "full" from the start.
 */
export function compactionSettings(setup: AgentSetup): CompactionSettings {
  const c = setup.compaction ?? {};
  const window = setup.model.contextWindow > 0 ? setup.model.contextWindow : Infinity;
  return {
    keepRecentTokens: c.keepRecentTokens || DEFAULT_KEEP_RECENT_TOKENS,
    reserveTokens: c.reserveTokens || Math.min(DEFAULT_RESERVE_TOKENS, Math.floor(window / 4)),
    model: c.model ?? setup.model,
    streamFn: c.streamFn ?? setup.streamFn,
  };
}

/**
 * True when the context about to be sent passes `contextWindow − reserveTokens` (pi-ai's
 * estimate: the last reply's reported usage plus what came after it, or characters when no usage
 * applies; a summary newer than a reply makes that reply's usage stale). A model without a
 * context window never passes.
 */
export function passesThreshold(messages: readonly Message[], contextWindow: number | undefined, reserveTokens: number): boolean {
  if (!contextWindow || contextWindow <= 0) return false;
  return estimateContextTokens(messages).tokens > contextWindow - reserveTokens;
}

/**
 * Plans a compaction of an active leaf path (see `planCompaction`): undefined when there is
 * nothing to compact. Whatever the reason, a compaction runs because the context must shrink (or
 * the caller asked), so when the whole path fits in `keepRecentTokens` it keeps only the last
 * exchange: a second overflow compaction then still has something to cut.
 */
export function planFor(path: readonly ConversationRecord[], settings: CompactionSettings): CompactionPlan | undefined {
  return planCompaction(path, { keepRecentTokens: settings.keepRecentTokens, manual: true });
}

/**
 * Summarizes a planned compaction into its record's payload (the summary extends the plan's
 * previous one). Throws `SummarizationError` when the summarizer fails.
 */
export async function compactionPayload(
  plan: CompactionPlan,
  reason: CompactionReason,
  settings: CompactionSettings,
  signal?: AbortSignal,
): Promise<CompactionPayload> {
  const summary = await summarize({
    model: settings.model,
    streamFn: settings.streamFn,
    ...(plan.previousSummary === undefined ? {} : { previousSummary: plan.previousSummary }),
    summarized: plan.summarized,
    ...(signal ? { signal } : {}),
  });
  const payload: CompactionPayload = {
    summary: summary.summary,
    firstKeptEntryId: plan.firstKeptEntryId,
    startIdx: plan.startIdx,
    endIdx: plan.endIdx,
    reason,
  };
  if (reportsUsage(summary.usage)) payload.usage = summary.usage;
  return payload;
}

/** How a failed compaction ends the drive: a transient summarizer error is worth a fresh attempt. */
export function compactionFailure(err: unknown): Extract<DriveOutcome, { kind: "transient" | "failed" }> {
  if (err instanceof SummarizationError) {
    if (err.retryable) return { kind: "transient", error: err.message };
    if (err.overflow) return { kind: "failed", errorCode: "context_overflow", error: `context overflow: ${err.message}` };
    return { kind: "failed", errorCode: "run_failed", error: err.message };
  }
  return { kind: "failed", errorCode: "run_failed", error: errorText(err) };
}

function reportsUsage(usage: Usage): boolean {
  return usage.input + usage.output + usage.cacheRead + usage.cacheWrite + usage.totalTokens > 0;
}
