/**
 * Counting the capacity units a DynamoDB client consumes (for benchmarks and cost tests).
 * Notes/verified.md §4: the counter must sit in the `deserialize` step with priority `high`
 * (the default priority runs inside the deserializer and sees no parsed output), and a second
 * middleware asks every call to report `ReturnConsumedCapacity: TOTAL`.
 *
 * Caveats: a refused conditional write (ConditionalCheckFailed, TransactionCanceled) throws and
 * reports nothing, although DynamoDB charges it; and DynamoDB Local 3.3.x under-counts
 * multi-item TransactWriteItems (items of equal rounded size are counted once), so transaction
 * figures measured against Local are a lower bound (real: 2 × Σ per-item WCU).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

const READ_COMMANDS = new Set([
  "GetItemCommand",
  "QueryCommand",
  "ScanCommand",
  "BatchGetItemCommand",
  "TransactGetItemsCommand",
]);
const REPORTING_COMMANDS = new Set([
  ...READ_COMMANDS,
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  "BatchWriteItemCommand",
  "TransactWriteItemsCommand",
]);

export interface CommandCapacity {
  calls: number;
  units: number;
}

export interface CapacityCounter {
  /** Read capacity units consumed (reads of any consistency, as DynamoDB reports them). */
  readonly readUnits: number;
  /** Write capacity units consumed (transactions at DynamoDB's 2× rate). */
  readonly writeUnits: number;
  /** Calls and units per command name (e.g. `TransactWriteItemsCommand`). */
  readonly byCommand: Readonly<Record<string, CommandCapacity>>;
  /** Zeroes the counts. */
  reset(): void;
  /** Removes the middleware from the client. */
  detach(): void;
}

let counterSeq = 0;

/** Attaches a consumed-capacity counter to `client` (every later call is counted). */
export function countConsumedCapacity(client: DynamoDBClient): CapacityCounter {
  const id = ++counterSeq;
  const counterName = `harnessCapacityCounter${id}`;
  const injectorName = `harnessReturnConsumedCapacity${id}`;
  let reads = 0;
  let writes = 0;
  let byCommand: Record<string, CommandCapacity> = {};

  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ReturnConsumedCapacity?: string };
      if (REPORTING_COMMANDS.has(context.commandName ?? "") && input.ReturnConsumedCapacity === undefined) {
        input.ReturnConsumedCapacity = "TOTAL";
      }
      return next(args);
    },
    { step: "initialize", name: injectorName },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      const entries = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as { CapacityUnits?: number }[];
      const units = entries.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
      const name = context.commandName ?? "unknown";
      if (READ_COMMANDS.has(name)) reads += units;
      else writes += units;
      const entry = (byCommand[name] ??= { calls: 0, units: 0 });
      entry.calls += 1;
      entry.units += units;
      return result;
    },
    { step: "deserialize", priority: "high", name: counterName },
  );

  return {
    get readUnits() {
      return reads;
    },
    get writeUnits() {
      return writes;
    },
    get byCommand() {
      return structuredClone(byCommand);
    },
    reset() {
      reads = 0;
      writes = 0;
      byCommand = {};
    },
    detach() {
      client.middlewareStack.remove(counterName);
      client.middlewareStack.remove(injectorName);
    },
  };
}
