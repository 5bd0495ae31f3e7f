/**
 * The dead-letter function: doorbells SQS gave up on. Settles `attempt_budget_exhausted` only
 * when the durable attempt count is spent, otherwise rings the work queue again and counts
 * DeadLetterRerung (alarm on it: something keeps failing healthy work). It bundles the agents
 * module: the attempt budget (`maxAttempts`) comes from the agent's `initialize`.
 */
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import * as agentsModule from "#harness-agents";
import { METRIC } from "./telemetry.ts";
import { sqsHandler } from "./wiring.ts";

export const handler = sqsHandler(agentsModule, async (h, doorbell) => {
  const outcome = await h.runtime.handleDeadLetter(doorbell);
  if (outcome.kind === "rerung") {
    h.logger.warn("dead-lettered doorbell of healthy work rung again", { outcome });
    h.metrics.addMetric(METRIC.deadLetterRerung, MetricUnit.Count, 1);
  } else {
    h.logger.info("dead-lettered doorbell handled", { outcome });
    if (outcome.kind === "exhausted") h.metrics.addMetric(METRIC.deadLetterExhausted, MetricUnit.Count, 1);
    if (outcome.kind === "dropped") h.metrics.addMetric(METRIC.deadLetterDropped, MetricUnit.Count, 1);
  }
  return { kind: "ack" };
});
