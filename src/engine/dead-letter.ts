import { errorText, isHarnessError } from "../errors.ts";
import { doorbellOf, type Doorbell } from "../ports/queue.ts";
import type { Submission } from "../store/submission.ts";
import { agentBudgets, validateAgentSetup } from "../agent/agent-setup.ts";
import { attemptBudgetExhausted } from "./attempt.ts";
import type { AttemptContext } from "./engine-context.ts";
import { AttemptLogWriter } from "./log-writer.ts";
import { usageOfEarlierAttempts } from "./earlier-usage.ts";
import { cascadeToChildren } from "./cancel.ts";
import { reconcileTerminalizing, settle } from "./settlement.ts";
import { claimFreshAttempt, reclaimExpired } from "./worker.ts";

/** What the dead-letter handler did with one doorbell the queue gave up on. */
export type DeadLetterOutcome =
  /** Nothing to do: the submission is gone, settled, or parked waiting on children. */
  | { kind: "dropped"; reason: "not_found" | "settled" | "waiting" }
  /** A crashed settlement was finished. */
  | { kind: "reconciled" }
  /** The durable attempt budget is spent: settled `attempt_budget_exhausted`. */
  | { kind: "exhausted"; attemptCount: number; maxAttempts: number }
  /**
   * Healthy work (budget left, a live lease, a continuation, …): rung again on the work queue.
   * Worth an alarm: something made the queue give up on work the store still wants done.
   */
  | { kind: "rerung"; reason: string; attemptCount: number; maxAttempts?: number };

/**
 * Decides about a doorbell the work queue dead-lettered (DESIGN §3.1, "the DLQ never fails
 * healthy work"). Queue receive counts are not attempts — throttles, an init crash of a broken
 * deploy and stale doorbells count too — so the store decides: only a submission whose durable
 * attempt count has reached its agent's `maxAttempts`, and whose next claim would charge one
 * more, is settled `attempt_budget_exhausted` (with its last error). Everything else unsettled is
 * rung again. Never runs the agent: the exhaustion is settled straight from the claim.
 */
export async function handleDeadLetter(ctx: AttemptContext, doorbell: Doorbell): Promise<DeadLetterOutcome> {
  let sub: Submission;
  try {
    sub = await ctx.store.getSubmission(doorbell.submissionId);
  } catch (err) {
    if (isHarnessError(err, "submission_not_found")) return { kind: "dropped", reason: "not_found" };
    throw err;
  }
  if (sub.status === "settled") return { kind: "dropped", reason: "settled" };
  if (sub.status === "waiting") return { kind: "dropped", reason: "waiting" };
  if (sub.status === "terminalizing") {
    if (ctx.clock.now() - sub.updatedAt >= ctx.settlementGraceMs) {
      await reconcileTerminalizing(ctx, sub);
      return { kind: "reconciled" };
    }
    return rering(ctx, sub, "settlement in progress");
  }

  let maxAttempts: number;
  try {
    maxAttempts = await maxAttemptsOf(ctx, sub);
  } catch (err) {
    // The worker settles a failing initializer as run_failed; that is its call, not ours.
    return rering(ctx, sub, `initializer failed: ${errorText(err)}`);
  }
  const leaseLive = sub.status === "running" && (sub.leaseExpiresAt ?? 0) > ctx.clock.now();
  if (leaseLive) return rering(ctx, sub, "lease is live", maxAttempts);
  if (sub.pendingResume) return rering(ctx, sub, "continuation pending (its next claim is free)", maxAttempts);
  if (sub.attemptCount < maxAttempts) return rering(ctx, sub, "attempt budget left", maxAttempts);

  // Spent: the next claim charges attempt maxAttempts + 1. Take it, and settle at once.
  if (sub.status === "running") await reclaimExpired(ctx, sub);
  let claimed: Submission;
  try {
    claimed = await claimFreshAttempt(ctx, sub.id, sub.input);
  } catch (err) {
    if (!isHarnessError(err, "claim_lost")) throw err;
    const current = await ctx.store.getSubmission(sub.id);
    if (current.status === "settled") return { kind: "dropped", reason: "settled" };
    return rering(ctx, current, "not claimable now (not the session head, or claimed elsewhere)", maxAttempts);
  }
  const attemptId = claimed.attemptId!;
  if (claimed.attemptCount <= maxAttempts) {
    // The claim charged nothing (a continuation raced in): hand it back untouched.
    await ctx.store.releaseSubmission({ submissionId: claimed.id, attemptId, continuation: claimed.pendingResume, ...(claimed.retry ? { retry: claimed.retry } : {}) });
    return rering(ctx, claimed, "budget not spent at claim time", maxAttempts);
  }
  await ctx.store.startAttempt({ id: attemptId, submissionId: claimed.id, ownerId: ctx.ownerId, startedAt: ctx.clock.now() });
  const settled = await settle(ctx, claimed, new AttemptLogWriter(ctx.store, ctx.clock, claimed, attemptId), {
    status: "failed",
    errorCode: "attempt_budget_exhausted",
    error: attemptBudgetExhausted(claimed, maxAttempts),
    ...(await usageOfEarlierAttempts(ctx, claimed)),
  }, { mayOpenLog: true });
  return { kind: "exhausted", attemptCount: claimed.attemptCount, maxAttempts };
}

async function maxAttemptsOf(ctx: AttemptContext, sub: Submission): Promise<number> {
  const definition = ctx.definitions.get(sub.sessionKey.agent);
  if (!definition) throw new Error(`unknown agent: ${sub.sessionKey.agent}`);
  const setup = await definition.initialize({ ...sub.sessionKey, env: ctx.env, ...(sub.input.principalId !== undefined ? { principalId: sub.input.principalId } : {}) });
  validateAgentSetup(setup);
  return agentBudgets(setup).maxAttempts;
}

async function rering(
  ctx: AttemptContext,
  sub: Submission,
  reason: string,
  maxAttempts?: number,
): Promise<DeadLetterOutcome> {
  await ctx.queue.ring(doorbellOf(sub));
  return { kind: "rerung", reason, attemptCount: sub.attemptCount, ...(maxAttempts !== undefined ? { maxAttempts } : {}) };
}
