/** What every part of the DynamoDB store shares: clients, names, clock and limits. */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Clock } from "../ports/clock.ts";
import type { BlobStore } from "./blob-store.ts";

export interface StoreContext {
  dynamo: DynamoDBClient;
  table: string;
  blobs: BlobStore;
  clock: Clock;
  /** A record payload, input or inbox body whose JSON exceeds this many bytes goes to S3. */
  spillThresholdBytes: number;
  /** Log batches of deltas only expire this long after their write (ADR 0034; Infinity: never). */
  deltaRetentionMs: number;
  /** Keep the index of idle sessions (`idle-sessions.ts`, conversation retention). */
  idleSessions: boolean;
  /**
   * A fresh admission-order key: a ULID from a monotonic factory on the store clock, so keys
   * from one process sort in admission order even within one millisecond.
   */
  nextOrd(): string;
}
