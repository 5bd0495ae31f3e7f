/**
 * The harness table: key schema, the two sparse KEYS_ONLY secondary indexes, and a helper that
 * creates it (tests, the local cloud). The CDK stack declares the same table from
 * {@link HARNESS_TABLE}; docs/adr/0005-dynamodb-table-design.md explains every key.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import type { SubmissionStatus } from "../store/submission.ts";
import { pad } from "./keys.ts";

/** Everything the infrastructure must declare for the table (all key attributes are strings). */
export const HARNESS_TABLE = {
  partitionKey: "pk",
  sortKey: "sk",
  billingMode: "PAY_PER_REQUEST",
  indexes: {
    /** Submission state items by status bucket (sharded); listings, sweeps, expired waits. */
    byStatus: { indexName: "byStatus", partitionKey: "byStatusPk", sortKey: "byStatusSk", projection: "KEYS_ONLY" },
    /** Child submissions by parent submission id, admission order. Sparse: children only. */
    byParent: { indexName: "byParent", partitionKey: "byParentPk", sortKey: "byParentSk", projection: "KEYS_ONLY" },
    /**
     * Submission state items by latest activity (`updatedAt`, then id), sharded like `byStatus`:
     * the console's listing across agents and instances (ADR 0054).
     */
    byActivity: { indexName: "byActivity", partitionKey: "byActivityPk", sortKey: "byActivitySk", projection: "KEYS_ONLY" },
  },
  /**
   * DynamoDB's TTL attribute (epoch seconds; items without it never expire): log batches of
   * streaming deltas carry it (ADR 0034).
   */
  timeToLiveAttribute: "expiresAt",
} as const;

/**
 * Status buckets of the `byStatus` index. A queued submission is `runnable` while it is its
 * session's head and `queued` behind it, so `listRunnable` reads exactly the runnable heads.
 * A `terminalizing` submission stays in the `running` bucket: reserving a settlement then
 * rewrites no index entry (2 write units less per submission), and the few in-hand submissions
 * are one bucket for the sweeper either way.
 */
export type StatusBucket = Exclude<SubmissionStatus, "terminalizing"> | "runnable";

/**
 * Each bucket is spread over this many index partitions (by a hash of the submission id) so no
 * single index partition takes every status transition of the table.
 */
export const STATUS_SHARDS = 4;

/** `byActivityPk` of a shard: the activity index's partitions (ADR 0054). */
export function activityShardKey(shard: number): string {
  return `activity#${shard}`;
}

export function statusBucketKey(bucket: StatusBucket, shard: number): string {
  return `${bucket}#${shard}`;
}

/** Index partition of a submission: FNV-1a of its id modulo the shard count. */
export function shardOf(submissionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < submissionId.length; i++) {
    hash ^= submissionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % STATUS_SHARDS;
}

/**
 * `byStatusSk` of a waiting submission: the time of its next wait check first (ADR 0021: never
 * after its deadline), so the due waits, expired ones included, are one range Query per shard,
 * and the key is where the check time lives (`waitCheckOfSortKey`). A row parked before wait
 * checks existed with an unbounded wait has `~` (after every time: never due).
 */
export function waitSortKey(waitCheckAt: number | undefined, submissionId: string): string {
  return `${waitCheckAt === undefined ? "~" : pad(waitCheckAt)}#${submissionId}`;
}

/** The wait check time a waiting row's `byStatusSk` holds, or undefined (`~`). */
export function waitCheckOfSortKey(sortKey: string | undefined): number | undefined {
  const time = sortKey?.slice(0, sortKey.indexOf("#"));
  return time === undefined || time === "~" || time === "" ? undefined : Number(time);
}

/**
 * Creates the harness table (on-demand) and waits until it is ACTIVE. Resolves quietly when the
 * table already exists.
 */
export async function createHarnessTable(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  const t = HARNESS_TABLE;
  const attributes = [t.partitionKey, t.sortKey, ...Object.values(t.indexes).flatMap((i) => [i.partitionKey, i.sortKey])];
  try {
    await dynamo.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: t.billingMode,
        AttributeDefinitions: attributes.map((name) => ({ AttributeName: name, AttributeType: "S" })),
        KeySchema: [
          { AttributeName: t.partitionKey, KeyType: "HASH" },
          { AttributeName: t.sortKey, KeyType: "RANGE" },
        ],
        GlobalSecondaryIndexes: Object.values(t.indexes).map((i) => ({
          IndexName: i.indexName,
          KeySchema: [
            { AttributeName: i.partitionKey, KeyType: "HASH" },
            { AttributeName: i.sortKey, KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: i.projection },
        })),
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitActive(dynamo, tableName);
  await enableTimeToLive(dynamo, tableName);
}

/** Turns TTL on for `HARNESS_TABLE.timeToLiveAttribute` unless it is on already. */
async function enableTimeToLive(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  const { TimeToLiveDescription } = await dynamo.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  if (TimeToLiveDescription?.TimeToLiveStatus === "ENABLED" || TimeToLiveDescription?.TimeToLiveStatus === "ENABLING") return;
  try {
    await dynamo.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: HARNESS_TABLE.timeToLiveAttribute, Enabled: true },
      }),
    );
  } catch (error) {
    // Two creators racing: the other one turned it on.
    if (!(error instanceof Error && /already enabled/i.test(error.message))) throw error;
  }
}

async function waitActive(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  for (let i = 0; ; i++) {
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === "ACTIVE");
    if (Table?.TableStatus === "ACTIVE" && indexesActive) return;
    if (i > 600) throw new Error(`table ${tableName} did not become ACTIVE`);
    await new Promise((r) => setTimeout(r, Math.min(1_000, 20 * 2 ** i)));
  }
}
