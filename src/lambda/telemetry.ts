import type { Logger } from "@aws-lambda-powertools/logger";
import { type Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { Correlation, HarnessEvent, Observer } from "../ports/observer.ts";
import { sessionKeyString } from "../store/submission.ts";

/** Metric names the handlers emit (EMF, namespace `POWERTOOLS_METRICS_NAMESPACE`). */
export const METRIC = {
  admitted: "SubmissionsAdmitted",
  /** Dimensions `status` and `errorCode` (`none` on success). */
  settled: "SubmissionsSettled",
  turnLatency: "TurnLatency",
  continuations: "Continuations",
  /** Dimension `decision` (lease_reclaimed, transient_backoff, …). */
  recoveries: "Recoveries",
  /** A dead-lettered doorbell of healthy work was rung again: alarm on it. */
  deadLetterRerung: "DeadLetterRerung",
  deadLetterExhausted: "DeadLetterExhausted",
  deadLetterDropped: "DeadLetterDropped",
  /** A message body that was not a doorbell. */
  malformedDoorbells: "MalformedDoorbells",
  sweepReclaimed: "SweepReclaimed",
  sweepRerung: "SweepRerung",
  sweepReconciled: "SweepReconciled",
} as const;

/** The correlation ids of an event, flat, for a log line. */
export function correlationKeys(c: Correlation): Record<string, string> {
  return {
    sessionKey: sessionKeyString(c.sessionKey),
    conversationId: c.conversationId,
    ...(c.submissionId ? { submissionId: c.submissionId } : {}),
    ...(c.attemptId ? { attemptId: c.attemptId } : {}),
    ...(c.turnId ? { turnId: c.turnId } : {}),
  };
}

/**
 * The runtime observer of the Lambda shape: lifecycle events as structured log lines carrying
 * the correlation ids, and the metrics that matter for operations — admitted, settled by status
 * and error code, turn latency, continuations, recoveries.
 */
export function telemetryObserver(logger: Logger, metrics: Metrics): Observer {
  const turnStarts = new Map<string, number>();
  const turnKey = (c: Correlation, turn: number) => `${c.attemptId ?? c.submissionId}:${turn}`;
  return (event: HarnessEvent) => {
    switch (event.type) {
      case "submission_admitted":
        logger.info("submission admitted", { ...correlationKeys(event.correlation), replayed: event.replayed });
        if (!event.replayed) metrics.addMetric(METRIC.admitted, MetricUnit.Count, 1);
        return;
      case "submission_claimed":
        logger.info("submission claimed", { ...correlationKeys(event.correlation), attemptCount: event.attemptCount });
        return;
      case "submission_settled": {
        const { status, errorCode, error } = event.payload;
        logger.info("submission settled", { ...correlationKeys(event.correlation), status, errorCode, error });
        const single = metrics.singleMetric();
        single.addDimensions({ status, errorCode: errorCode ?? "none" });
        single.addMetric(METRIC.settled, MetricUnit.Count, 1);
        return;
      }
      case "turn_started":
        turnStarts.set(turnKey(event.correlation, event.turn), Date.now());
        return;
      case "turn_ended": {
        const key = turnKey(event.correlation, event.turn);
        const started = turnStarts.get(key);
        turnStarts.delete(key);
        if (started !== undefined) metrics.addMetric(METRIC.turnLatency, MetricUnit.Milliseconds, Date.now() - started);
        return;
      }
      case "recovery": {
        const fields = { ...correlationKeys(event.correlation), decision: event.decision, detail: event.detail };
        if (event.decision === "continuation") {
          logger.info("run continues in a new invocation", fields);
          metrics.addMetric(METRIC.continuations, MetricUnit.Count, 1);
          return;
        }
        logger.warn("recovery", fields);
        const single = metrics.singleMetric();
        single.addDimensions({ decision: event.decision });
        single.addMetric(METRIC.recoveries, MetricUnit.Count, 1);
        return;
      }
      default:
        return;
    }
  };
}
