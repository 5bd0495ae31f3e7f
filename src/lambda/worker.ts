/**
 * The worker function: the SQS FIFO work queue's event source (batch size 1, partial batch
 * responses). Each doorbell is delivered to the runtime, which claims, runs and settles; the run
 * hands itself to a new invocation at a turn boundary once less than HARNESS_YIELD_MARGIN_MS is
 * left. Never throws (see `sqsHandler`).
 */
import * as agentsModule from "#harness-agents";
import { sqsHandler } from "./wiring.ts";

export const handler = sqsHandler(agentsModule, (h, doorbell, context) =>
  h.runtime.handleDoorbell(doorbell, {
    shouldYield: () => context.getRemainingTimeInMillis() < h.settings.yieldMarginMs,
  }),
);
