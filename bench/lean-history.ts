/**
 * Lean history (ADR 0034): what folding a settled conversation's streaming deltas saves.
 *
 * - DynamoDB (Local): a conversation of `TURNS` turns (a question, ~2 KB of reply streamed at
 *   about 80 tokens/s with the default flush policy), on the DynamoDB store; its log's item bytes
 *   per turn and the read units of a full replay (`readRecords` from the start, as a fresh SSE
 *   reader does), before and after the fold: the delta-only items gone (what DynamoDB's TTL does
 *   after the retention; Local never expires items, so the bench deletes those that carry the TTL
 *   attribute), read at a time after the fold (the turn's last deltas, kept on the item of its
 *   completed message, are left out of reads and still stored).
 * - SQLite: the same conversation's record bytes and record count before and after `foldDeltas`.
 */
import { DeleteItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { keylessModel, streamBlocks } from "../src/agent/block-stream.ts";
import { DEFAULT_DELTA_RETENTION_MS } from "../src/conversation/delta-folding.ts";
import { isStreamingDelta } from "../src/conversation/checkpoint.ts";
import { conversationPk } from "../src/dynamodb/keys.ts";
import { createDynamoClient } from "../src/dynamodb/index.ts";
import { type Clock, systemClock } from "../src/ports/clock.ts";
import { RUNTIME_DEFAULTS } from "../src/runtime/defaults.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { openSqliteStore } from "../src/sqlite/index.ts";
import type { Store } from "../src/store/store.ts";
import { itemSize, meteredDynamo } from "./dynamo-units.ts";
import { figure, note } from "./report.ts";

const TURNS = 5;
/** ~2 KB of reply, 16 characters per provider delta, 40 ms apart (about 80 tokens/s). */
const REPLY = Array.from({ length: 40 }, (_, i) => `Sentence ${i}: a durable log keeps every record. `).join("").slice(0, 2048);

const model: StreamFn = (m, _context, options) =>
  streamBlocks(m, () => [{ type: "text", text: REPLY }], { signal: options?.signal, chunkSize: 16, delayMs: 40 });

/** A clock the bench moves past the retention after the run (the store reads "now" from it). */
class ShiftedClock implements Clock {
  shift = 0;
  now(): number {
    return systemClock.now() + this.shift;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
}

async function converse(store: Store, clock: Clock): Promise<string> {
  const runtime = createRuntime({
    agents: { writer: { initialize: () => ({ model: keylessModel("bench-lean", "bench"), streamFn: model }) } },
    store,
    clock,
    flushPolicy: RUNTIME_DEFAULTS.flushPolicy,
    sweepIntervalMs: 10 * DEFAULT_DELTA_RETENTION_MS,
  });
  await runtime.start();
  try {
    let conversationId = "";
    for (let t = 0; t < TURNS; t++) {
      const { submissionId } = await runtime.dispatch({ agent: "writer", instance: "lean", message: { kind: "user", body: `question ${t}` } });
      const settled = await runtime.wait(submissionId);
      if (settled.status !== "succeeded") throw new Error(`turn ${t} failed: ${JSON.stringify(settled)}`);
      conversationId = (await store.getSubmission(submissionId)).conversationId;
    }
    return conversationId;
  } finally {
    await runtime.close();
  }
}

export async function benchLeanHistory(): Promise<void> {
  console.log(`lean history: ${TURNS} turns of ~2 KB streamed reply, default flush policy, before and after folding (ADR 0034)`);
  const local = await meteredDynamo("lean");
  const probe = createDynamoClient();
  try {
    const clock = new ShiftedClock();
    const store = local.store(clock);
    const conversationId = await converse(store, clock);
    const items = async () =>
      (
        await probe.send(
          new QueryCommand({ TableName: local.table, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: conversationPk(conversationId) } }, ConsistentRead: true }),
        )
      ).Items ?? [];
    const replay = async () => {
      local.meter.reset();
      const records = await store.readRecords(conversationId);
      return { records, units: local.meter.snapshot().total.readUnits };
    };
    const beforeItems = await items();
    const before = await replay();
    clock.shift = DEFAULT_DELTA_RETENTION_MS + 60_000;
    const expired = beforeItems.filter((i) => i.expiresAt !== undefined);
    for (const item of expired) await probe.send(new DeleteItemCommand({ TableName: local.table, Key: { pk: item.pk!, sk: item.sk! } }));
    const afterItems = await items();
    const after = await replay();
    const bytes = (list: typeof beforeItems) => list.reduce((n, i) => n + itemSize(i), 0);
    note(`DynamoDB: ${beforeItems.length} log items, ${expired.length} of deltas only (TTL); ${before.records.filter(isStreamingDelta).length} delta records before, ${after.records.filter(isStreamingDelta).length} read after`);
    figure("DynamoDB log bytes per turn, before folding", bytes(beforeItems) / TURNS, "B", undefined, 0);
    figure("DynamoDB log bytes per turn, after folding", bytes(afterItems) / TURNS, "B", undefined, 0);
    figure("DynamoDB storage per turn after / before", bytes(afterItems) / bytes(beforeItems), "", undefined, 2);
    figure("DynamoDB replay read units (whole conversation), before folding", before.units, "RRU", undefined, 1);
    figure("DynamoDB replay read units (whole conversation), after folding", after.units, "RRU", undefined, 1);
    figure("DynamoDB replay read units after / before", after.units / before.units, "", undefined, 2);
  } finally {
    probe.destroy();
    local.close();
  }

  const clock = new ShiftedClock();
  const sqlite = openSqliteStore({ path: ":memory:", clock });
  try {
    const conversationId = await converse(sqlite, clock);
    const measure = async () => {
      const records = await sqlite.readRecords(conversationId);
      return { count: records.length, bytes: records.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)), 0) };
    };
    const before = await measure();
    clock.shift = DEFAULT_DELTA_RETENTION_MS + 60_000;
    const folded = await sqlite.foldDeltas();
    const after = await measure();
    note(`SQLite: ${folded} delta records folded; ${before.count} → ${after.count} records`);
    figure("SQLite record bytes per turn, before folding", before.bytes / TURNS, "B", undefined, 0);
    figure("SQLite record bytes per turn, after folding", after.bytes / TURNS, "B", undefined, 0);
    figure("SQLite storage per turn after / before", after.bytes / before.bytes, "", undefined, 2);
  } finally {
    await sqlite.close();
  }
}

