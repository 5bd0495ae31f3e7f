/**
 * The wait check (ADR 0021): the sweep's look at a waiting parent for a lost wake. A wake is lost
 * only around the park (the parent dies between parking and reading its children's rows, or a
 * child that found its parent still running dies between its finalize and its second wake), so
 * the first check comes one settlement grace after the park, and each check that finds nothing
 * pushes the next one out by the wait's age (the checks double its age: ~7 in an hour, one a
 * day at most later). Waiting rows are indexed by their next check, so between checks a waiting
 * parent costs the sweep no read at all.
 */
import type { SweepStore } from "../store/store.ts";
import { pendingEntries, type Submission, type WaitEntry } from "../store/submission.ts";
import { deliverStoredAnswers, expireCallWaits } from "./call-answers.ts";
import type { AttemptContext, EngineContext } from "./engine-context.ts";
import { deliverSettledChildren } from "./wake.ts";

/**
 * The longest gap between two checks of one wait. Later checks only back up the first ones, so
 * a day bounds both what a forgotten wait costs (one check a day) and how late a wake lost in a
 * way nobody foresaw is found.
 */
export const MAX_WAIT_CHECK_INTERVAL_MS = 24 * 60 * 60 * 1000;

/** The first check of a wait parked at `now`: once everything around the park has settled or been reconciled. */
export function firstWaitCheckAt(now: number, settlementGraceMs: number): number {
  return now + settlementGraceMs;
}

/** The earliest own expiry of an approval or callback entry (∞ when none). */
export function earliestExpiry(entries: readonly WaitEntry[]): number {
  let earliest = Number.POSITIVE_INFINITY;
  for (const e of entries) if (e.kind === "approval" || e.kind === "callback") earliest = Math.min(earliest, e.expiresAt);
  return earliest;
}

/**
 * The check after one at `now` that found nothing: the wait's age (from `parkedAt`) later, so
 * the checks come at about twice, four times, … the age of the first; never sooner than
 * `minIntervalMs`, never more than {@link MAX_WAIT_CHECK_INTERVAL_MS} apart.
 */
export function nextWaitCheckAt(now: number, parkedAt: number, minIntervalMs: number): number {
  return now + Math.min(Math.max(now - parkedAt, minIntervalMs), MAX_WAIT_CHECK_INTERVAL_MS);
}

/**
 * Checks a waiting submission whose check came due (not its deadline): delivers the outcomes of
 * its settled children and the stored answers of its approvals and callbacks (the guarded
 * delivery makes a repeat harmless), answers as expired the approvals and callbacks whose own
 * expiry passed (ADR 0025), then, unless that requeued it, pushes its next check later, no later
 * than its earliest pending expiry; one that left its wait meanwhile, or that another sweep
 * checked, is left as it is (the store's conditional write). Returns the answers delivered (the
 * expiries not counted).
 */
export async function checkWait(ctx: AttemptContext & EngineContext<SweepStore>, parent: Submission, now: number): Promise<number> {
  const delivered = (await deliverSettledChildren(ctx, parent)) + (await deliverStoredAnswers(ctx, parent));
  const expired = await expireCallWaits(ctx, parent, now);
  const pending = parent.pendingCalls?.length ?? 0;
  if ((pending > 0 && delivered + expired >= pending) || parent.waitCheckAt === undefined) return delivered;
  const ahead = pendingEntries(parent).filter((e) => !((e.kind === "approval" || e.kind === "callback") && e.expiresAt <= now));
  await ctx.store.postponeWaitCheck({
    submissionId: parent.id,
    waitCheckAt: parent.waitCheckAt,
    // `updatedAt` of a waiting row is its park: nothing else rewrites it while it waits.
    nextCheckAt: Math.min(nextWaitCheckAt(now, parent.updatedAt, ctx.settlementGraceMs), earliestExpiry(ahead)),
  });
  return delivered;
}
