/**
 * What a rebuild reads on DynamoDB Local (issue 14 #3, ADR 0018), in read units as DynamoDB bills
 * them (bench/dynamo-units.ts): a new worker's delivery of a short submission on a long
 * conversation starts from the newest checkpoint, not from the start of the log, and an empty
 * turn-boundary drain is one GetItem.
 */
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { describe, expect, it } from "vitest";
import { UnitMeter } from "../../bench/dynamo-units.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { Doorbell } from "../../src/ports/queue.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { keylessModel, streamBlocks } from "../../src/agent/block-stream.ts";
import { createDynamoClient, createDynamoStore } from "../../src/dynamodb/index.ts";
import { BUCKET, freshStore, useTestClients } from "../support/dynamodb-fixtures.ts";
import { proseLike, withoutCheckpoints } from "../support/store-variants.ts";

const clients = useTestClients();

/** ~8 KB of text per reply that compresses about as prose does (1 KB delta flushes). */
const LONG_REPLY = proseLike(8_000, 7);
const TURNS = 24;


describe("a rebuild's read units (DynamoDB Local)", () => {
  it("a new worker delivers a short submission on a long conversation for at most 20 read units; empty drains are one GetItem", async () => {
    const clock = new ManualClock(Date.now());
    const dynamo = createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 });
    const probe = createDynamoClient();
    const made = await freshStore({ dynamo, s3: clients.s3 }, clock);
    const runtimes: Runtime[] = [];
    try {
      const meter = await UnitMeter.attach(dynamo, probe, made.tableName);
      const open = () => meter.wrap(createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo, s3: clients.s3, clock }));
      let reply = LONG_REPLY;
      const model = keylessModel("rebuild-cost", "bench");
      const streamFn: StreamFn = (_m, _c, options) => streamBlocks(model, () => [{ type: "text", text: reply }], { signal: options?.signal, chunkSize: 64 });
      const fifo: Doorbell[] = [];
      const runtimeOn = (store: Store) => {
        const runtime = createRuntime({
          agents: { a: { initialize: () => ({ model, streamFn }) } },
          store,
          clock,
          queue: { ring: async (d) => void fifo.push(d) },
          flushPolicy: { bytes: 1024, intervalMs: 200 },
          sweepIntervalMs: 3_600_000,
        });
        runtimes.push(runtime);
        return runtime;
      };
      const admin = runtimeOn(open());
      const address = { agent: "a", instance: "long" };
      for (let i = 0; i < TURNS; i++) {
        await admin.dispatch({ ...address, message: { kind: "user", body: `question ${i}` } });
        while (fifo.length > 0) await admin.handleDoorbell(fifo.shift()!);
      }
      reply = "Short answer.";
      const deliver = async (store: Store) => {
        await admin.dispatch({ ...address, message: { kind: "user", body: "one more" } });
        const doorbell = fifo.shift()!;
        meter.reset();
        await runtimeOn(store).handleDoorbell(doorbell);
        return meter.snapshot();
      };

      const fromCheckpoint = await deliver(open());
      expect(fromCheckpoint.total.readUnits, "a new worker's delivery from the newest checkpoint").toBeLessThanOrEqual(20);
      const reads = (fromCheckpoint.byOperation.get("readRecords")?.readUnits ?? 0) + (fromCheckpoint.byOperation.get("readCheckpoint")?.readUnits ?? 0);
      expect(reads, "the checkpoint and the log after it").toBeLessThanOrEqual(4);
      const drains = fromCheckpoint.byOperation.get("drainInbox")!;
      expect(drains.calls, "turn-boundary drains").toBeGreaterThan(0);
      expect(drains.commands, "an empty drain is one GetItem (ADR 0009)").toBe(drains.calls);
      expect(drains.readUnits).toBe(drains.calls);

      // The same delivery rebuilding from the whole log, as before ADR 0018.
      const wholeLog = await deliver(withoutCheckpoints(open()));
      // (Deltas that arrive while a write is in flight share one append (ADR 0022), so the log's
      // items are fewer and compress better than one per flush: ~37 units for 24 turns here.)
      expect(wholeLog.total.readUnits, "the whole log's rebuild misses what the checkpoint meets").toBeGreaterThan(20);
    } finally {
      for (const runtime of runtimes) await runtime.close();
      probe.destroy();
      dynamo.destroy();
      await made.dispose();
    }
  });
});
