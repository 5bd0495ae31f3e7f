/**
 * `resolute-harness/sqs`: the work queue on SQS FIFO. A message is a doorbell (ids only, one
 * message group per session); the store stays the truth, so a duplicate or stale message is a
 * no-op. The Lambda worker consumes it with `consumeSqsBatch`; anything that admits work rings it.
 *
 * @example
 * ```ts
 * import { SQSClient } from "@aws-sdk/client-sqs";
 * import { SqsWorkQueue } from "resolute-harness/sqs";
 *
 * const queue = new SqsWorkQueue({ client: new SQSClient({}), queueUrl: process.env.HARNESS_QUEUE_URL ?? "" });
 * ```
 *
 * @module
 */
export { consumeSqsBatch, failureBackoffMs, type ConsumerPhase, type SqsBatchConsumerOptions } from "./batch-consumer.ts";
export { decodeDoorbell, encodeDoorbell, MalformedDoorbell } from "./doorbell-body.ts";
export { doorbellGroupId, MAX_GROUP_ID_LENGTH, messageGroupId } from "./message-group.ts";
export { startMessageHeartbeat, type MessageHeartbeat, type MessageHeartbeatOptions } from "./message-heartbeat.ts";
export {
  changeMessageVisibility,
  MAX_VISIBILITY_SECONDS,
  SqsWorkQueue,
  visibilitySeconds,
  type SqsWorkQueueOptions,
} from "./sqs-queue.ts";
