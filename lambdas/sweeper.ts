/**
 * The sweeper function, on an EventBridge schedule: re-rings queued heads idle longer than
 * HARNESS_STALE_QUEUED_MS, reclaims expired leases, finishes interrupted settlements.
 */
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import { agents } from "#harness-agents";
import type { Context, ScheduledEvent } from "aws-lambda";
import type { SweepReport } from "../src/engine/sweep.ts";
import { METRIC } from "./telemetry.ts";
import { harness, invocation } from "./wiring.ts";

export async function handler(_event: ScheduledEvent, context: Context): Promise<SweepReport> {
  const h = harness(agents);
  return invocation(h, context, async () => {
    const report = await h.runtime.sweep({ staleQueuedMs: h.settings.staleQueuedMs });
    // An idle deployment's sweeps find nothing: log and publish only when one acted, so a custom
    // metric exists (and is billed) only in months with recoveries, and idle logs stay minimal.
    if (report.reclaimed + report.rerung + report.reconciled === 0) {
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
