import { idFloor } from "../conversation/ids.ts";
import type { SettledPayload } from "../protocol/records.ts";
import { budgetStart, type Submission } from "../store/submission.ts";
import { submissionUsage } from "../drive/submission-usage.ts";
import type { AttemptContext } from "./engine-context.ts";

/**
 * How far before it joined its session's order a submission's records may be minted (another
 * process's clock): generous, since it only bounds the read of a settlement without a drive.
 */
const ADMISSION_SKEW_MS = 5 * 60_000;

/**
 * The usage of a submission settled without a drive this attempt (budget spent, timed out, setup
 * refused): what its earlier attempts consumed, read from the log since it joined its session's
 * order (`budgetStart`: a delayed message's wait is skipped). Nothing to read for a first attempt.
 */
export async function usageOfEarlierAttempts(ctx: AttemptContext, sub: Submission): Promise<Pick<SettledPayload, "usage" | "cost">> {
  if (sub.attemptCount <= 1 && !sub.pendingResume) return {};
  const since = await ctx.store.readRecords(sub.conversationId, idFloor(Math.max(0, budgetStart(sub) - ADMISSION_SKEW_MS)));
  const { usage, cost } = submissionUsage(since, sub.id);
  return cost === undefined ? { usage } : { usage, cost };
}

