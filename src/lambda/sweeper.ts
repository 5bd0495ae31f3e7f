/**
 * The sweeper function, on an EventBridge schedule: re-rings queued heads idle longer than
 * HARNESS_STALE_QUEUED_MS, reclaims expired leases, finishes interrupted settlements, expires
 * waits and makes the wait checks that are due (the lost-wake backstop, ADR 0021). It never
 * runs an agent: it knows the agents by name (HARNESS_AGENT_NAMES) and does not bundle the agents
 * module.
 */
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import type { Context, ScheduledEvent } from "aws-lambda";
import type { SweepReport } from "../engine/sweep.ts";
import { agentNamesFromEnv } from "./settings.ts";
import { METRIC } from "./telemetry.ts";
import { wiring, invocation } from "./wiring.ts";

export async function handler(_event: ScheduledEvent, context: Context): Promise<SweepReport> {
  const h = await wiring(agentNamesFromEnv());
  return invocation(h, context, async () => {
    const report = await h.runtime.sweep({ staleQueuedMs: h.settings.staleQueuedMs });
    // An idle deployment's sweeps find nothing: log and publish only when one acted, so a custom
    // metric exists (and is billed) only in months with recoveries, and idle logs stay minimal.
    // A wait check that found nothing is routine (a few per waiting parent); one that delivered
    // (a lost wake recovered) or an expired wait is an action.
    if (report.reclaimed + report.rerung + report.reconciled + report.expiredWaits + report.rewoken + (report.expiredConversations ?? 0) === 0) {
      h.logger.debug("sweep found nothing to do");
      return report;
    }
    h.logger.info("sweep done", { ...report });
    if (report.reclaimed > 0) h.metrics.addMetric(METRIC.sweepReclaimed, MetricUnit.Count, report.reclaimed);
    if (report.rerung > 0) h.metrics.addMetric(METRIC.sweepRerung, MetricUnit.Count, report.rerung);
    if (report.reconciled > 0) h.metrics.addMetric(METRIC.sweepReconciled, MetricUnit.Count, report.reconciled);
    return report;
  });
}
