/**
 * Delayed messages (ADR 0025): a dispatch with `notBefore` is admitted now, waiting outside its
 * session's order; at its time the sweep (the embedded runtime's timer too) makes it join the
 * order and rings it. Nothing runs for it and no queue message exists for it until then.
 */
import { isHarnessError } from "../errors.ts";
import { correlationOf } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { SweepStore } from "../store/store.ts";
import type { EngineContext } from "./engine-context.ts";

/** The farthest ahead a `notBefore` may be: a year. */
export const MAX_DELAY_MS = 366 * 24 * 60 * 60 * 1000;

/**
 * A delayed message joins its session's order and is rung (its session's head runs it when the
 * submissions ahead of it have settled). False when it had joined already or was cancelled.
 */
export async function releaseDelayed(ctx: EngineContext<SweepStore>, submissionId: string): Promise<boolean> {
  let joined;
  try {
    joined = await ctx.store.joinSessionOrder(submissionId);
  } catch (err) {
    if (isHarnessError(err, "claim_lost") || isHarnessError(err, "submission_not_found")) return false;
    throw err;
  }
  ctx.observe({ type: "submission_resumed", correlation: correlationOf(joined) });
  await ctx.queue.ring(doorbellOf(joined));
  return true;
}
