import type { AssistantMessage } from "@earendil-works/pi-ai";
import { estimateMessageTokens, estimateTextAndImageContentTokens, estimateTextTokens } from "@earendil-works/pi-ai/utils/estimate";
import type { ConversationRecord } from "../protocol/records.ts";
import { projectPath, withoutExcluded } from "./projection.ts";

/** Tokens of the most recent history a compaction keeps verbatim. */
export const DEFAULT_KEEP_RECENT_TOKENS = 20_000;
/** Room left in the context window for the next reply; passing `contextWindow − reserve` compacts. */
export const DEFAULT_RESERVE_TOKENS = 16_384;

/** Why a compaction ran (the `reason` of its record and observer event). */
export type CompactionReason = "threshold" | "overflow" | "manual";

/** What a compaction will summarize and where the kept history starts. */
export interface CompactionPlan {
  /** The summary this compaction builds on (the path's current root compaction), if any. */
  previousSummary?: string;
  /** The records whose history the summary replaces, in path order. */
  summarized: ConversationRecord[];
  /** The first record kept verbatim: the reducer re-parents it onto the new summary. */
  firstKeptEntryId: string;
  /**
   * The summarized span as indices into the path's projected messages (system message not
   * counted): `[startIdx, endIdx)`. `startIdx` is 1 when the path starts with a summary.
   */
  startIdx: number;
  endIdx: number;
  /** Estimated tokens of the summarized span and of the kept suffix. */
  summarizedTokens: number;
  keptTokens: number;
}

export interface PlanOptions {
  keepRecentTokens: number;
  /**
   * A manual compaction always compacts something when the path has more than one exchange:
   * when everything fits in `keepRecentTokens` it keeps only the last exchange.
   */
  manual?: boolean;
}

/**
 * Chooses the cut point of a compaction over an active leaf path (root first).
 *
 * History is cut only where a user-side message (`user_message` or `signal`) starts, so a tool
 * call is never separated from its outcome (outcomes are written before the next user-side
 * message). The kept suffix is the shortest one starting at such a message that holds at least
 * `keepRecentTokens`; when the whole path is smaller, an automatic compaction has nothing to do
 * (undefined) and a manual one keeps only the last exchange. Undefined also when nothing lies
 * before the cut (one exchange, or everything already summarized). Messages of a submission
 * settled `excludedFromContext` play no part. Pure.
 */
export function planCompaction(fullPath: readonly ConversationRecord[], options: PlanOptions): CompactionPlan | undefined {
  // Messages left out of every projection are neither summarized nor kept.
  const path = withoutExcluded(fullPath);
  const root = path[0];
  const previousSummary = root?.kind === "compaction" ? root.payload.summary : undefined;
  const first = previousSummary === undefined ? 0 : 1;

  const tokens = path.map(recordTokens);
  const suffix: number[] = new Array<number>(path.length + 1).fill(0);
  for (let i = path.length - 1; i >= 0; i--) suffix[i] = suffix[i + 1]! + tokens[i]!;

  // Cut candidates after the first exchange: a cut at the first one would summarize nothing.
  const starts: number[] = [];
  for (let i = first; i < path.length; i++) if (isExchangeStart(path[i]!)) starts.push(i);
  const candidates = starts.slice(1);
  if (candidates.length === 0) return undefined;

  let cut: number | undefined;
  for (let c = candidates.length - 1; c >= 0; c--) {
    if (suffix[candidates[c]!]! >= options.keepRecentTokens) {
      cut = candidates[c]!;
      break;
    }
  }
  if (cut === undefined) {
    if (!options.manual) return undefined;
    cut = candidates[candidates.length - 1]!;
  }

  const summarized = path.slice(first, cut);
  const startIdx = previousSummary === undefined ? 0 : 1;
  const endIdx = startIdx + projectPath(summarized).messages.length;
  return {
    ...(previousSummary === undefined ? {} : { previousSummary }),
    summarized,
    firstKeptEntryId: path[cut]!.id,
    startIdx,
    endIdx,
    summarizedTokens: suffix[first]! - suffix[cut]!,
    keptTokens: suffix[cut]!,
  };
}

/** A user-side message starts an exchange: the only place history may be cut. */
function isExchangeStart(record: ConversationRecord): boolean {
  return record.kind === "user_message" || record.kind === "signal";
}

/** Estimated context tokens a record contributes once projected (0 for kinds never projected). */
export function recordTokens(record: ConversationRecord): number {
  switch (record.kind) {
    case "user_message":
    case "signal":
      return estimateTextTokens(record.payload.body);
    case "compaction":
      return estimateTextTokens(record.payload.summary);
    case "tool_outcome":
      // `data` (pi's `details`) is never sent to the model.
      return estimateTextAndImageContentTokens(record.payload.content ?? []);
    case "assistant_message_completed": {
      const body = record.payload.message.body as AssistantMessage | undefined;
      if (body === undefined || body === null || !Array.isArray(body.content)) return 0;
      if (body.stopReason === "error" || body.stopReason === "aborted") return 0;
      return estimateMessageTokens(body);
    }
    default:
      return 0;
  }
}
