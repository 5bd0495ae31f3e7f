/**
 * Reading DynamoDB's refusals. A conditional write that fails its condition says so with
 * `ConditionalCheckFailedException` (single item) or `TransactionCanceledException` with one
 * `CancellationReason` per transaction item; the store asks for `ALL_OLD` on failure so the
 * current item comes back with the refusal and the caller can tell "someone else moved it"
 * (→ a typed contract error) from "my own earlier try already did it" (→ success).
 */
import {
  type CancellationReason,
  ConditionalCheckFailedException,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import type { Item } from "./item.ts";

/** The refusal of a single-item conditional write: the current item (undefined when absent). */
export interface ConditionRefusal {
  item: Item | undefined;
}

/** A `ConditionRefusal` when `error` is a failed single-item condition, else undefined. */
export function conditionRefusal(error: unknown): ConditionRefusal | undefined {
  if (error instanceof ConditionalCheckFailedException) return { item: error.Item };
  return undefined;
}

/** The per-item reasons of a cancelled transaction, else undefined. */
export function cancellationReasons(error: unknown): CancellationReason[] | undefined {
  if (error instanceof TransactionCanceledException) return error.CancellationReasons ?? [];
  return undefined;
}

/** The item at `index` failed its condition; its current value (ALL_OLD) rides along. */
export function failedCondition(reasons: CancellationReason[], index: number): boolean {
  return reasons[index]?.Code === "ConditionalCheckFailed";
}

/**
 * The transaction lost a race or was throttled rather than refused: nothing failed a condition,
 * and running the step again from a fresh read is the answer.
 */
export function isTransientCancellation(reasons: CancellationReason[]): boolean {
  return (
    reasons.some((r) => r.Code === "TransactionConflict" || r.Code === "ThrottlingError" || r.Code === "ProvisionedThroughputExceeded") &&
    !reasons.some((r) => r.Code === "ConditionalCheckFailed")
  );
}

/** A store step stayed contended through every re-run; the caller may retry later. */
export class DynamoStoreContended extends Error {
  constructor(what: string, attempts: number, options?: { cause?: unknown }) {
    super(`${what}: still contended after ${attempts} tries`, options);
    this.name = "DynamoStoreContended";
  }
}
