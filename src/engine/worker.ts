import { isHarnessError } from "../errors.ts";
import { newId } from "../conversation/ids.ts";
import { correlationOf } from "../ports/observer.ts";
import type { DoorbellOutcome, Doorbell } from "../ports/queue.ts";
import type { DispatchMessage, Submission } from "../store/submission.ts";
import { runAttempt, type AttemptOptions } from "./attempt.ts";
import type { AttemptContext } from "./engine-context.ts";
import { cascadeToChildren } from "./cancel.ts";
import { reconcileTerminalizing, ringSessionHead } from "./settlement.ts";

/** Slack added to a live lease's remaining time before a stale doorbell is looked at again. */
const LEASE_SLACK_MS = 250;

/**
 * Handles one doorbell: re-reads the submission (the store is the truth), claims it with a
 * compare-and-set if it is its session's runnable head, and runs the attempt. Duplicate and
 * stale doorbells are harmless; one for a run whose lease is still live comes back after the
 * lease's remaining time rather than being dropped (recovery must not rest on the sweeper alone).
 */
export async function handleDoorbell(
  ctx: AttemptContext,
  doorbell: Doorbell,
  options: AttemptOptions,
): Promise<DoorbellOutcome> {
  let sub: Submission;
  try {
    sub = await ctx.store.getSubmission(doorbell.submissionId);
  } catch (err) {
    if (isHarnessError(err, "submission_not_found")) return { kind: "ack" };
    throw err;
  }

  if (sub.status === "waiting") return { kind: "ack" };
  if (sub.status === "settled") {
    // A late or duplicate doorbell: make sure the session's next head was not left unrung (its
    // ring after the settlement may have failed). Only a head that has waited longer than a
    // lease: one promoted or admitted just now was rung by its settler or its admission, and a
    // second ring would be carried down the session's queue as one more duplicate.
    await ringSessionHead(ctx, sub.sessionKey, ctx.leaseMs);
    return { kind: "ack" };
  }
  if (sub.status === "terminalizing") {
    if (ctx.clock.now() - sub.updatedAt < ctx.settlementGraceMs) {
      return { kind: "retry", delayMs: ctx.settlementGraceMs };
    }
    await reconcileTerminalizing(ctx, sub);
    return { kind: "ack" };
  }
  if (sub.status === "queued" && sub.notBefore !== undefined && sub.notBefore > ctx.clock.now()) {
    // Released under provider backpressure: not before the time the provider asked for.
    return { kind: "retry", delayMs: sub.notBefore - ctx.clock.now() };
  }
  if (sub.status === "running") {
    const remaining = (sub.leaseExpiresAt ?? 0) - ctx.clock.now();
    if (remaining > 0) return { kind: "retry", delayMs: remaining + LEASE_SLACK_MS };
    // The owner died: hand the row back to the queue, then claim it as a fresh attempt.
    await reclaimExpired(ctx, sub);
  }

  let claimed: Submission;
  try {
    claimed = await claimFreshAttempt(ctx, sub.id, sub.input);
  } catch (err) {
    if (!isHarnessError(err, "claim_lost")) throw err;
    // Not the head (its settlement rings us), already claimed, or settled meanwhile.
    const current = await ctx.store.getSubmission(sub.id);
    const remaining = (current.leaseExpiresAt ?? 0) - ctx.clock.now();
    if (current.status === "running" && remaining > 0) return { kind: "retry", delayMs: remaining + LEASE_SLACK_MS };
    return { kind: "ack" };
  }
  await ctx.faults?.("claimed", claimed.id);

  const correlation = correlationOf(claimed, claimed.attemptId);
  ctx.observe({ type: "submission_claimed", correlation, ownerId: ctx.ownerId, attemptCount: claimed.attemptCount });
  await ctx.store.startAttempt({
    id: claimed.attemptId!,
    submissionId: claimed.id,
    ownerId: ctx.ownerId,
    startedAt: ctx.clock.now(),
  });
  ctx.observe({ type: "attempt_started", correlation });
  await ctx.faults?.("attempt_started", claimed.id);

  const end = await runAttempt(ctx, claimed, options);
  if (end.notBefore !== undefined) return { kind: "retry", delayMs: Math.max(1, end.notBefore - ctx.clock.now()) };
  return { kind: "ack" };
}

/**
 * Claims the submission for a fresh attempt of this owner; `ClaimLost` when it is not claimable.
 * `input`: the submission's input as the caller read it (it never changes), so the store need not
 * read it again.
 */
export function claimFreshAttempt(ctx: AttemptContext, submissionId: string, input?: DispatchMessage): Promise<Submission> {
  const now = ctx.clock.now();
  return ctx.store.claimSubmission({
    submissionId,
    attemptId: newId(now),
    ownerId: ctx.ownerId,
    leaseExpiresAt: now + ctx.leaseMs,
    ...(input !== undefined ? { input } : {}),
  });
}

/** Releases a running row whose lease expired (a lost race means someone else already did). */
export async function reclaimExpired(ctx: AttemptContext, sub: Submission): Promise<boolean> {
  try {
    await ctx.store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return false;
    throw err;
  }
  ctx.observe({
    type: "recovery",
    correlation: correlationOf(sub, sub.attemptId),
    decision: "lease_reclaimed",
    detail: "lease expired; released for a fresh attempt",
  });
  return true;
}
