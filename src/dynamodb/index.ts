/**
 * `resolute-harness/dynamodb`: the serverless store. DynamoDB holds the truth (submissions, the
 * conversation logs as chained batch items, inboxes); S3 holds attachments and payloads too large
 * for an item. The `Harness` construct (`resolute-harness/cdk`) creates both and wires this store
 * into every function; use it directly to run the engine against your own table.
 *
 * @example
 * ```ts
 * import { createDynamoStore } from "resolute-harness/dynamodb";
 *
 * const store = createDynamoStore({ tableName: process.env.HARNESS_TABLE ?? "harness", bucketName: process.env.HARNESS_BUCKET ?? "harness-blobs" });
 * ```
 *
 * @module
 */
export { createDynamoStore, DEFAULT_SPILL_THRESHOLD_BYTES, type DynamoStoreOptions } from "./dynamo-store.ts";
export { createHarnessTable, HARNESS_TABLE, STATUS_SHARDS } from "./table.ts";
export { createHarnessBucket, createS3Client } from "./s3-client.ts";
export { createDynamoClient } from "./clients.ts";
export { harnessRetryStrategy, type RetryPolicy, type SdkRetryStrategy } from "./retry.ts";
export { countConsumedCapacity, type CapacityCounter, type CommandCapacity } from "./capacity.ts";
export { DynamoStoreContended } from "./errors.ts";
export { s3DirectUploads, type S3DirectUploadsOptions } from "./direct-uploads.ts";
export type { DeletionStep } from "./deletion.ts";
