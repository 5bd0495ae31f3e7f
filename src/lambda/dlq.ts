/**
 * The dead-letter function, on the sweep schedule: drains the doorbells SQS gave up on
 * (`drainDeadLetters`; no event source, so an idle deployment pays no long polls on this queue).
 * Each is settled `attempt_budget_exhausted` only when the durable attempt count is spent,
 * otherwise rung on the work queue again and counted as DeadLetterRerung (alarm on it: something
 * keeps failing healthy work). It bundles the agents module: the attempt budget (`maxAttempts`)
 * comes from the agent's `initialize`.
 */
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import type { Context, ScheduledEvent } from "aws-lambda";
import * as agentsModule from "#harness-agents";
import { type DeadLetterDrainReport, drainDeadLetters } from "../sqs/dead-letter-drain.ts";
import { HARNESS_ENV } from "./env.ts";
import { METRIC } from "./telemetry.ts";
import { errorFields, wiring, invocation } from "./wiring.ts";

/** Time left at which the drain stops receiving, so the last dead letter's handling fits. */
const STOP_MARGIN_MS = 15_000;

export async function handler(_event: ScheduledEvent, context: Context): Promise<DeadLetterDrainReport> {
  const h = await wiring(agentsModule);
  const queueUrl = h.settings.deadLetterQueueUrl;
  if (!queueUrl) throw new Error(`missing environment variable ${HARNESS_ENV.deadLetterQueueUrl}`);
  return invocation(h, context, async () => {
    const report = await drainDeadLetters({
      client: h.sqs,
      queueUrl,
      // Hidden for the rest of this invocation and a minute more: a crash mid-handling lets the
      // next tick see it again, never two invocations at once.
      visibilityTimeoutMs: context.getRemainingTimeInMillis() + 60_000,
      shouldStop: () => context.getRemainingTimeInMillis() < STOP_MARGIN_MS,
      handle: async (doorbell) => {
        h.logger.appendKeys({ submissionId: doorbell.submissionId, sessionKey: doorbell.group });
        const outcome = await h.runtime.handleDeadLetter(doorbell);
        if (outcome.kind === "rerung") {
          h.logger.warn("dead-lettered doorbell of healthy work rung again", { outcome });
          h.metrics.addMetric(METRIC.deadLetterRerung, MetricUnit.Count, 1);
        } else {
          h.logger.info("dead-lettered doorbell handled", { outcome });
          if (outcome.kind === "exhausted") h.metrics.addMetric(METRIC.deadLetterExhausted, MetricUnit.Count, 1);
          if (outcome.kind === "dropped") h.metrics.addMetric(METRIC.deadLetterDropped, MetricUnit.Count, 1);
        }
      },
      onError: (err, message, phase) => {
        h.logger.error(`dead letter ${phase} failed`, { messageId: message.MessageId, error: errorFields(err) });
        if (phase === "decode") h.metrics.addMetric(METRIC.malformedDoorbells, MetricUnit.Count, 1);
      },
    });
    // An idle tick finds nothing: log at debug only, as the sweeper does.
    if (report.received === 0) h.logger.debug("no dead letters");
    else h.logger.info("dead letters drained", { ...report });
    return report;
  });
}
