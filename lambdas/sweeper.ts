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
    h.logger.info("sweep done", { ...report });
    h.metrics.addMetric(METRIC.sweepReclaimed, MetricUnit.Count, report.reclaimed);
    h.metrics.addMetric(METRIC.sweepRerung, MetricUnit.Count, report.rerung);
    h.metrics.addMetric(METRIC.sweepReconciled, MetricUnit.Count, report.reconciled);
    return report;
  });
}
