/**
 * Test plumbing for the DynamoDB store: clients pointed at the emulators (the aws project's
 * setup file put their endpoints in the environment), a fresh table per store so listings,
 * which are global to a table, never see another case's rows, and one shared bucket
 * (content-addressed, so sharing it cannot leak state between cases).
 */
import { randomUUID } from "node:crypto";
import { DeleteTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll } from "vitest";
import type { Clock } from "../../src/ports/clock.ts";
import type { Store } from "../../src/store/store.ts";
import {
  createDynamoClient,
  createDynamoStore,
  createHarnessBucket,
  createHarnessTable,
  createS3Client,
  type DynamoStoreOptions,
} from "../../src/dynamodb/index.ts";

export const BUCKET = "harness-test-blobs";

let tableSeq = 0;

/** A unique, valid table name. */
export function freshTableName(): string {
  tableSeq += 1;
  return `harness-${process.pid}-${tableSeq}-${randomUUID().slice(0, 8)}`;
}

/** Shared clients for one test file (fast retries: the emulator never throttles by itself). */
export function testClients(): { dynamo: DynamoDBClient; s3: S3Client } {
  return {
    dynamo: createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 }),
    s3: createS3Client(),
  };
}

/**
 * `testClients()` for the whole test file: the shared bucket made before its tests, both clients
 * closed after them.
 */
export function useTestClients(): { dynamo: DynamoDBClient; s3: S3Client } {
  const clients = testClients();
  beforeAll(() => ensureBucket(clients.s3));
  afterAll(() => {
    clients.dynamo.destroy();
    clients.s3.destroy();
  });
  return clients;
}

export async function ensureBucket(s3: S3Client): Promise<void> {
  await createHarnessBucket(s3, BUCKET);
}

/** A store over a fresh table; `dispose()` drops the table. */
export async function freshStore(
  clients: { dynamo: DynamoDBClient; s3: S3Client },
  clock: Clock,
  extra: Partial<DynamoStoreOptions> = {},
): Promise<{ store: Store; tableName: string; dispose(): Promise<void> }> {
  const tableName = freshTableName();
  await createHarnessTable(clients.dynamo, tableName);
  const store = createDynamoStore({ tableName, bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3, clock, ...extra });
  return {
    store,
    tableName,
    dispose: async () => {
      await store.close?.();
      await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
    },
  };
}
