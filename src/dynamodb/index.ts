/** The serverless store: DynamoDB (truth) + S3 (attachments, large payloads). */
export { createDynamoStore, DEFAULT_SPILL_THRESHOLD_BYTES, type DynamoStoreOptions } from "./dynamo-store.ts";
export { createHarnessTable, HARNESS_TABLE, STATUS_SHARDS } from "./table.ts";
export { createHarnessBucket } from "./blob-store.ts";
export { createDynamoClient, createS3Client } from "./clients.ts";
export { harnessRetryStrategy, type RetryPolicy, type SdkRetryStrategy } from "./retry.ts";
export { countConsumedCapacity, type CapacityCounter, type CommandCapacity } from "./capacity.ts";
export { DynamoStoreContended } from "./errors.ts";
