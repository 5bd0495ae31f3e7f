export { consumeSqsBatch, failureBackoffMs, type ConsumerPhase, type SqsBatchConsumerOptions } from "./batch-consumer.ts";
export { decodeDoorbell, encodeDoorbell, MalformedDoorbell } from "./doorbell-body.ts";
export { MAX_GROUP_ID_LENGTH, messageGroupId } from "./message-group.ts";
export { startMessageHeartbeat, type MessageHeartbeat, type MessageHeartbeatOptions } from "./message-heartbeat.ts";
export {
  changeMessageVisibility,
  MAX_VISIBILITY_SECONDS,
  SqsWorkQueue,
  visibilitySeconds,
  type SqsWorkQueueOptions,
} from "./sqs-queue.ts";
