/**
 * A hot session on DynamoDB Local (issue 23 §4, ADR 0035): 100 admissions into ONE session at once,
 * through runtimes on the DynamoDB store (as many http containers would make them; doorbells
 * captured), several rounds on fresh sessions, behind a head and into a new session. Prints how many were admitted, how the rest were refused, the
 * admission latency p50/p99 and the transactions per admission (1 = no retry; a number lost to a
 * skip, or a head move that raced another, costs one more).
 *
 *   npm run bench -- hot-session       # this bench alone (starts DynamoDB Local itself)
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { isHarnessError } from "../src/errors.ts";
import type { Doorbell } from "../src/ports/queue.ts";
import { createRuntime, type Runtime } from "../src/runtime/runtime.ts";
import { keylessModel, streamBlocks } from "../src/agent/block-stream.ts";
import { createDynamoClient, createDynamoStore, createHarnessBucket, createHarnessTable, createS3Client } from "../src/dynamodb/index.ts";
import { atLeast, atMost, figure, note } from "./report.ts";
import { percentile } from "./stats.ts";

/** Admissions into one session at once. */
const CONCURRENT = 100;
const ROUNDS = 3;
/** Runtimes (each its own DynamoDB client), as separate http containers. */
const RUNTIMES = 10;

const TARGET = {
  admitted: atLeast(CONCURRENT, ` of ${CONCURRENT}`),
};

/** 100 concurrent admissions into one session (the emulators' endpoints in the environment). */
export async function benchHotSession(): Promise<void> {
  const table = `bench-hot-${process.pid}`;
  const bucket = `${table}-blobs`;
  const admin = createDynamoClient();
  const s3 = createS3Client();
  await createHarnessTable(admin, table);
  await createHarnessBucket(s3, bucket);
  const counting = new AsyncLocalStorage<{ transactions: number }>();
  const rings: Doorbell[] = [];
  const runtimes: Runtime[] = [];
  const clients: ReturnType<typeof createDynamoClient>[] = [];
  for (let i = 0; i < RUNTIMES; i++) {
    const dynamo = createDynamoClient();
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "TransactWriteItemsCommand") {
          const c = counting.getStore();
          if (c) c.transactions++;
        }
        return next(args);
      },
      { step: "initialize", name: "benchCountTransactions" },
    );
    clients.push(dynamo);
    runtimes.push(
      createRuntime({
        agents: { bench: { initialize: () => ({ model: keylessModel("bench-hot", "bench"), streamFn: (m, _c, o) => streamBlocks(m, () => [{ type: "text", text: "ok" }], { signal: o?.signal }) }) } },
        store: createDynamoStore({ tableName: table, bucketName: bucket, dynamo, s3 }),
        queue: { ring: async (d) => void rings.push(d) },
        sweepIntervalMs: 3_600_000,
      }),
    );
  }
  try {
    // Behind a head (a hot session's usual state: one runs, the rest queue behind it), and into a
    // new session (the first admission and the head pointer raced by all the others).
    for (const shape of ["behind a head", "into a new session"] as const) {
      const latencies: number[] = [];
      const transactions: number[] = [];
      const refused = new Map<string, number>();
      let admitted = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const instance = `hot-${process.pid}-${shape.length}-${round}`;
        if (shape === "behind a head") {
          await runtimes[0]!.dispatch({ agent: "bench", instance, dispatchId: `${instance}-first`, message: { kind: "user", body: "first" } });
        }
        const results = await Promise.all(
          Array.from({ length: CONCURRENT }, (_, i) =>
            counting.run({ transactions: 0 }, async () => {
              const t0 = performance.now();
              try {
                await runtimes[i % RUNTIMES]!.dispatch({ agent: "bench", instance, dispatchId: `${instance}-${i}`, message: { kind: "user", body: `message ${i}` } });
                latencies.push(performance.now() - t0);
                transactions.push(counting.getStore()!.transactions);
                return true;
              } catch (err) {
                const code = isHarnessError(err) ? err.code : (err as Error).name;
                refused.set(code, (refused.get(code) ?? 0) + 1);
                return false;
              }
            }),
          ),
        );
        admitted += results.filter(Boolean).length;
      }
      console.log(`${CONCURRENT} concurrent admissions ${shape}, DynamoDB Local (${ROUNDS} rounds, fresh sessions, ${RUNTIMES} runtimes):`);
      figure("admitted per round (mean)", admitted / ROUNDS, "", TARGET.admitted, 1);
      if (refused.size > 0) note(`refused: ${[...refused].map(([code, n]) => `${n} ${code}`).join(", ")}`);
      figure("admission latency p50", percentile(latencies, 50), "ms", undefined, 0);
      figure("admission latency p99", percentile(latencies, 99), "ms", undefined, 0);
      const mean = transactions.reduce((a, b) => a + b, 0) / Math.max(1, transactions.length);
      figure("admission transactions per admitted submission (mean; 1 = no retry)", mean, "", atMost(2, ""), 2);
      note(`max for one admission: ${Math.max(0, ...transactions)}, p99 ${percentile(transactions, 99).toFixed(0)}`);
    }
  } finally {
    await Promise.all(runtimes.map((r) => r.close()));
    for (const c of clients) c.destroy();
    admin.destroy();
    s3.destroy();
  }
}
