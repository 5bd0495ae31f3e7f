/**
 * The outside review's cost findings (issue 14), each a figure with its target: read units of
 * operations that must not grow with what does not matter to them (the length of a
 * conversation, the size of inputs), and doorbell deliveries per submission when a client sends
 * its next message as the previous one settles. DynamoDB Local, read units as `UnitMeter` bills
 * them (DynamoDB's 0.5/1 minimum per request applied).
 */
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { ManualClock } from "../src/ports/clock.ts";
import type { Doorbell } from "../src/ports/queue.ts";
import type { Store } from "../src/store/store.ts";
import { createRuntime, type Runtime } from "../src/runtime/runtime.ts";
import { keylessModel, streamBlocks } from "../src/agent/block-stream.ts";
import { STREAM_PAGE } from "../src/http/record-stream.ts";
import { proseLike } from "../test/support/store-variants.ts";
import { meteredDynamo } from "./dynamo-units.ts";
import { atMost, figure, note } from "./report.ts";

/** Submissions of ~8 KB replies (1 KB delta flushes) before the measured one: ~800 KB of log. */
const LONG_CONVERSATION_TURNS = 100;
/** ~8 KB of text that compresses about as prose does (words drawn by a fixed LCG). */
const REPLY = proseLike(8_000, 12345);
const BIG_INPUT = "i".repeat(90_000);
const RUNNING = 20;

const TARGET = {
  deliver: atMost(20, ""),
  wait: atMost(2, ""),
  liveness: atMost(1, ""),
  sweep: atMost(25, ""),
  deliveries: atMost(1, ""),
};

function replyModel(text: () => string): StreamFn {
  const model = keylessModel("bench-review", "bench");
  return (_m, _context, options) => streamBlocks(model, () => [{ type: "text", text: text() }], { signal: options?.signal, chunkSize: 64 });
}

export async function benchReviewCosts(): Promise<void> {
  const local = await meteredDynamo("review");
  const { meter } = local;
  const clock = new ManualClock(Date.now());
  const open = () => local.store(clock);
  let reply = REPLY;
  const fifo: Doorbell[] = [];
  const runtimeOn = (store: Store): Runtime =>
    createRuntime({
      agents: { bench: { initialize: () => ({ model: keylessModel("bench-review", "bench"), streamFn: replyModel(() => reply) }) } },
      store,
      clock,
      queue: { ring: async (d) => void fifo.push(d) },
      flushPolicy: { bytes: 1024, intervalMs: 200 },
      sweepIntervalMs: 3_600_000,
    });
  const reads = async (op: () => Promise<unknown>) => {
    meter.reset();
    await op();
    return meter.snapshot().total.readUnits;
  };
  const units = async (op: () => Promise<unknown>) => {
    meter.reset();
    await op();
    const { readUnits, writeUnits } = meter.snapshot().total;
    return { readUnits, writeUnits };
  };
  const runtime = runtimeOn(open());
  try {
    console.log("the review's cost findings (issue 14), DynamoDB read units (DynamoDB Local, as billed):");
    // A long conversation: each turn's ~8 KB reply is stored as ~1 KB delta flushes.
    const address = { agent: "bench", instance: "long" };
    for (let i = 0; i < LONG_CONVERSATION_TURNS; i++) {
      await runtime.dispatch({ ...address, message: { kind: "user", body: `question ${i}` } });
      while (fifo.length > 0) await runtime.handleDoorbell(fifo.shift()!);
    }
    reply = "Short answer.";
    const { submissionId } = await runtime.dispatch({ ...address, message: { kind: "user", body: "one more" } });
    const doorbell = fifo.shift()!;
    const deliver = await reads(() => runtimeOn(open()).handleDoorbell(doorbell));
    note(`a conversation of ${LONG_CONVERSATION_TURNS} turns, ~${Math.round((LONG_CONVERSATION_TURNS * REPLY.length) / 1000)} KB of 1 KB delta flushes:`);
    figure("handleDoorbell() of one short submission (a new worker: claim, rebuild, run, settle)", deliver, "", TARGET.deliver);
    note("  (the rebuild starts from the newest log checkpoint, stored at a settlement every 32 KiB of log: ADR 0018)");
    figure("runtime.wait() of it from another process (settled)", await reads(() => runtimeOn(open()).wait(submissionId)), "", TARGET.wait);

    // A manual compaction of that conversation (issue 9): admitted by one process, run by a new
    // worker (claim, rebuild, summarize with the keyless model, append the record, settle).
    const admitted = await units(() => runtime.compact(address));
    const compacted = await units(() => runtimeOn(open()).handleDoorbell(fifo.shift()!));
    figure("a manual compaction of it: admission (runtime.compact), read units", admitted.readUnits, "");
    figure("a manual compaction of it: admission, write units", admitted.writeUnits, "");
    figure("a manual compaction of it: the worker's claim, rebuild, summary, record and settlement, read units", compacted.readUnits, "");
    figure("a manual compaction of it: the worker, write units", compacted.writeUnits, "");
    await runtime.dispatch({ ...address, message: { kind: "user", body: "after the compaction" } });
    const afterCompaction = await reads(() => runtimeOn(open()).handleDoorbell(fifo.shift()!));
    figure("handleDoorbell() of one short submission after the compaction", afterCompaction, "", TARGET.deliver);


    // A caught-up SSE poll while the head (queued behind nothing, not yet run) holds a 90 KB input.
    const live = { agent: "bench", instance: "sse" };
    await runtime.dispatch({ ...live, message: { kind: "user", body: BIG_INPUT } });
    fifo.length = 0;
    const conv = (await runtime.conversation(live)).id;
    const head = (await runtime.records(conv)).at(-1)?.id ?? "";
    figure("caught-up SSE poll, head input 90 KB: liveness (runtime.sessionLive)", await reads(() => runtime.sessionLive(live)), "", TARGET.liveness);
    note(`  + the log read after the last record: ${(await reads(() => runtime.records(conv, head, STREAM_PAGE))).toFixed(1)} (one strongly consistent Query)`);

    // One sweep of a table with 20 healthy running submissions of 90 KB inputs (and nothing else).
    const store = open();
    for (const queued of await store.listRunnable()) {
      await store.cancelSubmission(queued.id, { errorCode: "cancelled", error: "cancelled: bench: out of the way" });
      await store.finalizeSettlement(queued.id);
    }
    for (let i = 0; i < RUNNING; i++) {
      const key = { agent: "bench", instance: `busy-${i}`, session: "default" };
      const { submissionId: id } = await runtime.dispatch({ ...key, message: { kind: "user", body: BIG_INPUT } });
      await store.claimSubmission({ submissionId: id, attemptId: `a-${i}`, ownerId: "bench", leaseExpiresAt: clock.now() + 3_600_000 });
    }
    fifo.length = 0;
    figure(`one sweep, ${RUNNING} healthy running submissions with 90 KB inputs, nothing to do`, await reads(() => runtime.sweep({ staleQueuedMs: 60_000 })), "", TARGET.sweep);

    // A client sending its next message when the previous one has settled, and the queue
    // delivering two doorbells twice (the review's pattern): one delivery per submission, the
    // duplicates acked without ringing anyone again.
    const client = { agent: "bench", instance: "client" };
    const ids: string[] = [];
    const send = async () => ids.push((await runtime.dispatch({ ...client, message: { kind: "user", body: `m${ids.length}` } })).submissionId);
    await send();
    fifo.push({ ...fifo[0]! });
    let deliveries = 0;
    while (fifo.length > 0) {
      deliveries++;
      await runtime.handleDoorbell(fifo.shift()!);
      if (ids.length < 5 && (await store.getSubmission(ids.at(-1)!)).status === "settled") {
        await send();
        if (ids.length === 3) fifo.push({ ...fifo.at(-1)! });
      }
    }
    figure("doorbell deliveries per submission, 5 sent one after another's settlement (2 duplicate doorbells not counted)", (deliveries - 2) / 5, "", TARGET.deliveries, 2);
  } finally {
    await runtime.close();
    local.close();
  }
}
