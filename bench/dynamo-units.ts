/**
 * DynamoDB capacity per store operation, for the cost benchmark. `countConsumedCapacity` gives
 * what DynamoDB Local reports; this meter adds, per store method (attributed through
 * AsyncLocalStorage around each call):
 *
 * - the write units of every TransactWriteItems computed from item sizes, because Local counts
 *   items of equal rounded size once (notes/verified.md §3): each item is read before and after
 *   the transaction (with a separate, uncounted client), and charged 2 × ceil(max(before, after)
 *   / 1 KB), plus 2 × the index entries it writes (put, delete, or both when its index key
 *   moves); item size = Σ attribute name + value lengths (DynamoDB's rule);
 * - reads at DynamoDB's minimum (0.5 unit eventually consistent, 1 strongly), which Local does
 *   not charge for a Query that finds nothing;
 * - refused conditional writes, which throw without reporting what DynamoDB charges for them.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type AttributeValue,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  type TransactWriteItem,
} from "@aws-sdk/client-dynamodb";
import type { S3Client } from "@aws-sdk/client-s3";
import type { Clock } from "../src/ports/clock.ts";
import type { Store } from "../src/store/store.ts";
import {
  type CapacityCounter,
  countConsumedCapacity,
  createDynamoClient,
  createDynamoStore,
  createHarnessBucket,
  createHarnessTable,
  createS3Client,
} from "../src/dynamodb/index.ts";
import { itemBytes } from "../src/dynamodb/item.ts";

const KB = 1024;
const READS = new Set(["GetItemCommand", "QueryCommand", "ScanCommand", "BatchGetItemCommand", "TransactGetItemsCommand"]);

type Item = Record<string, AttributeValue>;

/** A single-item write as the transaction item it is equivalent to (for sizing). */
const SINGLE_WRITES: Record<string, (input: { TableName?: string; Item?: Item; Key?: Item }) => TransactWriteItem> = {
  PutItemCommand: (i) => ({ Put: { TableName: i.TableName, Item: i.Item } }),
  UpdateItemCommand: (i) => ({ Update: { TableName: i.TableName, Key: i.Key, UpdateExpression: "" } }),
  DeleteItemCommand: (i) => ({ Delete: { TableName: i.TableName, Key: i.Key } }),
};

/** Units of one store operation (or of all of them). */
export interface OperationUnits {
  calls: number;
  /** DynamoDB commands sent. */
  commands: number;
  /** Read units as Local reported them. */
  localReadUnits: number;
  /** Read units with DynamoDB's per-request minimum applied. */
  readUnits: number;
  /** Write units as Local reported them. */
  localWriteUnits: number;
  /** Write units with transactions computed from item sizes (others as reported). */
  writeUnits: number;
  /** Conditional writes refused (charged by DynamoDB, reported by nobody). */
  refused: number;
}

interface IndexSchema {
  name: string;
  keys: string[];
  projection: "ALL" | "KEYS_ONLY" | "INCLUDE";
  include: string[];
}

const zero = (): OperationUnits => ({
  calls: 0,
  commands: 0,
  localReadUnits: 0,
  readUnits: 0,
  localWriteUnits: 0,
  writeUnits: 0,
  refused: 0,
});

/** The meter: attach to the store's client, wrap the store, read per operation. */
export class UnitMeter {
  readonly #als = new AsyncLocalStorage<string>();
  #ops = new Map<string, OperationUnits>();
  /** Write units by the kind of item written (transactional ones computed and doubled). */
  #itemUnitsByKind = new Map<string, number>();
  /**
   * Single-item writes (PutItem, UpdateItem, DeleteItem), which Local reports correctly, whose
   * units computed by the same rules agree with Local's: the check of the size and index rules.
   */
  ruleChecks = { agree: 0, total: 0 };
  #tableKeys: string[] = [];
  #indexes: IndexSchema[] = [];
  readonly #probe: DynamoDBClient;
  readonly #table: string;

  private constructor(probe: DynamoDBClient, table: string) {
    this.#probe = probe;
    this.#table = table;
  }

  /**
   * Attaches to `client` (the store's). `probe` reads items before and after transactions and
   * must not be metered (a second client to the same endpoint).
   */
  static async attach(client: DynamoDBClient, probe: DynamoDBClient, table: string): Promise<UnitMeter> {
    const meter = new UnitMeter(probe, table);
    const described = await probe.send(new DescribeTableCommand({ TableName: table }));
    meter.#tableKeys = (described.Table?.KeySchema ?? []).map((k) => k.AttributeName!);
    meter.#indexes = (described.Table?.GlobalSecondaryIndexes ?? []).map((g) => ({
      name: g.IndexName!,
      keys: (g.KeySchema ?? []).map((k) => k.AttributeName!),
      projection: (g.Projection?.ProjectionType ?? "ALL") as IndexSchema["projection"],
      include: g.Projection?.NonKeyAttributes ?? [],
    }));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? "unknown";
        const op = meter.#entry(meter.#als.getStore() ?? "(outside the store)");
        op.commands++;
        const input = args.input as { TransactItems?: TransactWriteItem[]; ConsistentRead?: boolean };
        const single = SINGLE_WRITES[name]?.(args.input as never);
        const writes = name === "TransactWriteItemsCommand" ? (input.TransactItems ?? []) : single ? [single] : undefined;
        const before = writes ? await meter.#snapshot(writes) : undefined;
        let result;
        try {
          result = await next(args);
        } catch (err) {
          const code = (err as { name?: string }).name ?? "";
          if (code === "ConditionalCheckFailedException" || code === "TransactionCanceledException") op.refused++;
          throw err;
        }
        const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
        const entries = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as { CapacityUnits?: number }[];
        const reported = entries.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
        if (name === "BatchGetItemCommand") {
          // DynamoDB bills a batch per item read (each rounded up to 4 KB, half for eventually
          // consistent); Local reports less, so bill it from the items returned.
          op.localReadUnits += reported;
          const request = args.input as { RequestItems?: Record<string, { ConsistentRead?: boolean }> };
          const responses = (result.output as { Responses?: Record<string, Record<string, AttributeValue>[]> }).Responses ?? {};
          for (const [tableName, items] of Object.entries(responses)) {
            const unit = request.RequestItems?.[tableName]?.ConsistentRead ? 1 : 0.5;
            for (const item of items) op.readUnits += unit * Math.max(1, Math.ceil(itemBytes(item) / 4096));
          }
        } else if (name === "QueryCommand") {
          // A Query is billed on the total size of the items it read, per started 4 KB.
          op.localReadUnits += reported;
          const items = (result.output as { Items?: Record<string, AttributeValue>[] }).Items ?? [];
          const bytes = items.reduce((sum, item) => sum + itemBytes(item), 0);
          const unit = input.ConsistentRead ? 1 : 0.5;
          op.readUnits += Math.max(reported, unit * Math.max(1, Math.ceil(bytes / 4096)));
        } else if (READS.has(name)) {
          op.localReadUnits += reported;
          op.readUnits += Math.max(reported, input.ConsistentRead ? 1 : 0.5);
        } else {
          op.localWriteUnits += reported;
          if (before && !single) {
            const units = await meter.#itemUnits(writes!, before);
            units.forEach((u, i) => {
              const kind = itemKind(meter.#keyOf(writes![i]!));
              meter.#itemUnitsByKind.set(kind, (meter.#itemUnitsByKind.get(kind) ?? 0) + 2 * u);
              op.writeUnits += 2 * u;
            });
          } else {
            op.writeUnits += reported;
            if (writes) {
              const kind = itemKind(meter.#keyOf(writes[0]!));
              meter.#itemUnitsByKind.set(kind, (meter.#itemUnitsByKind.get(kind) ?? 0) + reported);
            }
            if (before && writes) {
              meter.ruleChecks.total++;
              const units = await meter.#itemUnits(writes, before);
              if (units.reduce((a, b) => a + b, 0) === reported) meter.ruleChecks.agree++;
            }
          }
        }
        return result;
      },
      { step: "initialize", name: "benchUnitMeter" },
    );
    return meter;
  }

  /** The store with each method call attributed to the method's name. */
  wrap(store: Store): Store {
    const als = this.#als;
    const entry = (name: string) => this.#entry(name);
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function" || typeof prop !== "string") return value;
        return (...args: unknown[]) => {
          entry(prop).calls++;
          return als.run(prop, () => (value as (...a: unknown[]) => unknown).apply(target, args));
        };
      },
    });
  }

  /** Per operation, and `total`. */
  snapshot(): { byOperation: Map<string, OperationUnits>; total: OperationUnits } {
    const total = zero();
    for (const op of this.#ops.values()) {
      for (const k of Object.keys(total) as (keyof OperationUnits)[]) total[k] += op[k];
    }
    return { byOperation: new Map([...this.#ops].map(([k, v]) => [k, { ...v }])), total };
  }

  reset(): void {
    this.#ops = new Map();
    this.#itemUnitsByKind = new Map();
  }

  /** Write units by item kind (log batch, submission state, …), transactional ones doubled. */
  writeUnitsByItem(): Map<string, number> {
    return new Map(this.#itemUnitsByKind);
  }

  #entry(name: string): OperationUnits {
    let op = this.#ops.get(name);
    if (!op) this.#ops.set(name, (op = zero()));
    return op;
  }

  #keyOf(item: TransactWriteItem): Item {
    const key = item.Put ? pick(item.Put.Item ?? {}, this.#tableKeys) : (item.Update ?? item.Delete ?? item.ConditionCheck)?.Key;
    if (!key) throw new Error("transaction item without a key");
    return key;
  }

  async #snapshot(items: TransactWriteItem[]): Promise<(Item | undefined)[]> {
    return Promise.all(
      items.map(async (item) => {
        const read = await this.#probe.send(new GetItemCommand({ TableName: this.#table, Key: this.#keyOf(item), ConsistentRead: true }));
        return read.Item;
      }),
    );
  }

  /** Units of each write (not yet doubled for a transaction), from the items before and after. */
  async #itemUnits(items: TransactWriteItem[], before: (Item | undefined)[]): Promise<number[]> {
    const after = await this.#snapshot(items);
    return items.map((item, i) => {
      const old = before[i];
      const now = after[i];
      if (item.ConditionCheck) return Math.max(1, Math.ceil(itemSize(old ?? {}) / KB));
      let units = Math.max(1, Math.ceil(Math.max(itemSize(old ?? {}), itemSize(now ?? {})) / KB));
      for (const index of this.#indexes) units += this.#indexUnits(index, old, now);
      return units;
    });
  }

  /** Index entries an item's write puts, deletes or rewrites (1 unit per started KB each). */
  #indexUnits(index: IndexSchema, old: Item | undefined, now: Item | undefined): number {
    const inOld = old !== undefined && index.keys.every((k) => old[k] !== undefined);
    const inNow = now !== undefined && index.keys.every((k) => now[k] !== undefined);
    const size = (item: Item) => Math.max(1, Math.ceil(itemSize(this.#projected(index, item)) / KB));
    if (!inOld && !inNow) return 0;
    if (!inOld) return size(now!);
    if (!inNow) return size(old!);
    const moved = index.keys.some((k) => JSON.stringify(old![k]) !== JSON.stringify(now![k]));
    if (moved) return size(old!) + size(now!);
    const changed = JSON.stringify(this.#projected(index, old!)) !== JSON.stringify(this.#projected(index, now!));
    return changed ? Math.max(size(old!), size(now!)) : 0;
  }

  #projected(index: IndexSchema, item: Item): Item {
    if (index.projection === "ALL") return item;
    const keep = new Set([...this.#tableKeys, ...index.keys, ...(index.projection === "INCLUDE" ? index.include : [])]);
    return pick(item, [...keep]);
  }
}

/** What an item is, from its sort key (src/dynamodb/keys.ts). */
function itemKind(key: Item): string {
  const sk = key.sk?.S ?? "";
  if (sk.startsWith("L#")) return "log batch";
  if (sk === "ST") return "submission state";
  if (sk === "IN") return "submission input";
  if (sk === "SESSION") return "session";
  if (sk.startsWith("Q#")) return "session member";
  if (sk.startsWith("AT#")) return "attempt";
  if (sk.startsWith("IB#")) return "inbox";
  return sk.split("#")[0] || "other";
}

function pick(item: Item, names: string[]): Item {
  const out: Item = {};
  for (const n of names) if (item[n] !== undefined) out[n] = item[n]!;
  return out;
}

/** DynamoDB's item size: Σ attribute name length + value length (UTF-8 bytes). */
export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8(name) + valueSize(value);
  return size;
}

function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS) return v.SS.reduce((s, x) => s + utf8(x), 0);
  if (v.NS) return v.NS.reduce((s, x) => s + numberSize(x), 0);
  if (v.BS) return v.BS.reduce((s, x) => s + x.byteLength, 0);
  if (v.L) return 3 + v.L.reduce((s, x) => s + valueSize(x) + 1, 0);
  if (v.M) return 3 + Object.entries(v.M).reduce((s, [k, x]) => s + utf8(k) + valueSize(x) + 1, 0);
  return 0;
}

/** About 1 byte per two significant digits, plus 1. */
function numberSize(n: string): number {
  const digits = n.replace(/^-/, "").replace(/[eE].*$/, "").replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

function utf8(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/** A fresh harness table and bucket on the local endpoints, with a meter on the store's client. */
export interface MeteredDynamo {
  readonly table: string;
  readonly bucket: string;
  readonly dynamo: DynamoDBClient;
  readonly s3: S3Client;
  readonly meter: UnitMeter;
  /** What DynamoDB Local reports (asked on every request; the meter takes single writes from it). */
  readonly counter: CapacityCounter;
  /** A DynamoDB store on the table, every call metered. */
  store(clock?: Clock): Store;
  /** Closes the clients. */
  close(): void;
}

/** Creates the table and bucket `bench-<name>-<pid>` and attaches a meter (the benches' shared setup). */
export async function meteredDynamo(name: string): Promise<MeteredDynamo> {
  const table = `bench-${name}-${process.pid}`;
  const bucket = `${table}-blobs`;
  const dynamo = createDynamoClient();
  const probe = createDynamoClient();
  const s3 = createS3Client();
  await createHarnessTable(dynamo, table);
  await createHarnessBucket(s3, bucket);
  // Local reports a single-item write's units only when asked to: the meter takes those as reported.
  const counter = countConsumedCapacity(dynamo);
  const meter = await UnitMeter.attach(dynamo, probe, table);
  return {
    table,
    bucket,
    dynamo,
    s3,
    meter,
    counter,
    store: (clock) => meter.wrap(createDynamoStore({ tableName: table, bucketName: bucket, dynamo, s3, ...(clock ? { clock } : {}) })),
    close: () => {
      counter.detach();
      dynamo.destroy();
      probe.destroy();
      s3.destroy();
    },
  };
}

/** Billed read and write units and requests of one phase of a workload (the cost benches). */
export type Units = { reads: number; writes: number; commands: number };

export function zeroUnits(): Units {
  return { reads: 0, writes: 0, commands: 0 };
}
export function addUnits(into: Units, u: Units): void {
  into.reads += u.reads;
  into.writes += u.writes;
  into.commands += u.commands;
}
export function sumUnits(...us: Units[]): Units {
  const out = zeroUnits();
  for (const u of us) addUnits(out, u);
  return out;
}

/** Bytes of every item under the given partition keys (an uncounted client). */
export async function itemBytesOf(client: DynamoDBClient, table: string, pks: string[]): Promise<number> {
  let bytes = 0;
  for (const pk of pks) {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await client.send(
        new QueryCommand({ TableName: table, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: pk } }, ExclusiveStartKey: start }),
      );
      for (const item of page.Items ?? []) bytes += itemBytes(item);
      start = page.LastEvaluatedKey;
    } while (start);
  }
  return bytes;
}
