import { doorbellOf } from "../ports/queue.ts";
import type { SweepStore } from "../store/store.ts";
import type { AttemptContext, EngineContext } from "./engine-context.ts";
import { cascadeToChildren } from "./cancel.ts";
import { reconcileTerminalizing } from "./settlement.ts";
import { reclaimExpired } from "./worker.ts";
import { checkWait } from "./wait-check.ts";
import { expireWait } from "./wait-expiry.ts";
import { releaseDelayed } from "./delayed-messages.ts";

export interface SweepOptions {
  /** Re-ring queued heads that have not moved for this long (0: every queued head). */
  staleQueuedMs: number;
}

export interface SweepReport {
  reconciled: number;
  reclaimed: number;
  rerung: number;
  /** Waiting parents whose wait ran past `waitUntil` (`maxChildWaitMs` or their budget): answered `task wait expired` and requeued. */
  expiredWaits: number;
  /** Wait checks made: waiting parents whose check came due (the lost-wake backstop, ADR 0021). */
  waitChecks: number;
  /** Answers delivered by the backstop (a child's outcome, a decision or callback whose wake was lost). */
  rewoken: number;
  /** Delayed messages that joined their session's order at their time (ADR 0025). */
  released: number;
  /** Conversations deleted for being idle past `conversationRetentionMs` (ADR 0034), when it is set. */
  expiredConversations?: number;
  /** Streaming delta records removed from settled submissions' logs (lean history, ADR 0034; 0 on DynamoDB, whose TTL does it). */
  deltasFolded: number;
}

/**
 * The safety net that makes lost doorbells and dead workers harmless: finishes settlements a
 * crash interrupted, hands expired leases back to the queue, and re-rings queued heads whose
 * doorbell may be gone. Runs on a timer in the embedded shape and on a schedule in the
 * serverless one; every action is a compare-and-set, so concurrent sweeps are safe.
 */
export async function sweep(ctx: AttemptContext & EngineContext<SweepStore>, options: SweepOptions): Promise<SweepReport> {
  const report: SweepReport = { reconciled: 0, reclaimed: 0, rerung: 0, expiredWaits: 0, waitChecks: 0, rewoken: 0, released: 0, deltasFolded: 0 };
  const now = ctx.clock.now();

  // Listed together: a store may answer listings of one index bucket with one read. Of the
  // waiting parents, only those whose wait check is due are read at all.
  const [terminalizing, expired, runnable, dueWaits] = await Promise.all([
    ctx.store.listByStatus("terminalizing"),
    ctx.store.listExpiredLeases(now),
    ctx.store.listRunnable(),
    ctx.store.listDueWaits(now),
  ]);
  for (const sub of terminalizing) {
    if (now - sub.updatedAt < ctx.settlementGraceMs) continue; // a live settlement, mid-flight
    if (await reconcileTerminalizing(ctx, sub)) report.reconciled++;
  }

  for (const sub of expired) {
    if (await reclaimExpired(ctx, sub)) {
      report.reclaimed++;
      await ctx.queue.ring(doorbellOf(sub));
    }
  }

  for (const sub of runnable) {
    if (now - sub.updatedAt < options.staleQueuedMs) continue;
    // Waiting out provider backpressure: its doorbell comes back at `notBefore` by itself.
    if (sub.notBefore !== undefined && sub.notBefore > now) continue;
    await ctx.queue.ring(doorbellOf(sub));
    report.rerung++;
  }

  for (const parent of dueWaits) {
    if (parent.delayedUntil !== undefined) {
      // A delayed message whose time came: it joins its session's order and is rung.
      if (await releaseDelayed(ctx, parent.id)) report.released++;
      continue;
    }
    if (parent.waitUntil !== undefined && parent.waitUntil < now) {
      await expireWait(ctx, parent);
      report.expiredWaits++;
    } else {
      // The backstop: a child settled but its wake was lost (a crash around the park); its row
      // says so. A check that finds nothing pushes the next one later.
      report.waitChecks++;
      report.rewoken += await checkWait(ctx, parent, now);
    }
  }

  // Last: the rest of the sweep is what keeps runs moving.
  report.deltasFolded = await ctx.store.foldDeltas();
  return report;
}
