/**
 * The DynamoDB units of a cancel (issue 9), DynamoDB Local, as `UnitMeter` bills them (transaction
 * items computed from their sizes, DynamoDB's read minimum applied): of a queued head (settled at
 * once: the reservation, the record, the finalize that moves the head), of a queued submission
 * behind a running head (reserved only: its record follows its predecessor's), and of a running
 * one (the request; then the owner's stop and settlement).
 */
import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Doorbell } from "../src/ports/queue.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { keylessModel, streamBlocks } from "../src/agent/block-stream.ts";
import { meteredDynamo } from "./dynamo-units.ts";
import { figure, note } from "./report.ts";

/** Streams a little text, then holds the stream open until the attempt is aborted. */
const heldStream: StreamFn = (m, _context, options) =>
  streamBlocks(
    m,
    () => [
      { type: "text", text: "a partial answer that will be cut short " },
      { type: "hook", run: (signal) => new Promise<void>((resolve) => (signal?.aborted ? resolve() : signal?.addEventListener("abort", () => resolve(), { once: true }))) },
      { type: "text", text: "never sent" },
    ],
    { signal: options?.signal, chunkSize: 64 },
  );

export async function benchCancelCosts(): Promise<void> {
  const local = await meteredDynamo("cancel");
  const { meter } = local;
  const store = local.store();
  const fifo: Doorbell[] = [];
  const runtime = createRuntime({
    agents: { bench: { initialize: () => ({ model: keylessModel("bench-cancel", "bench"), streamFn: heldStream }) } },
    store,
    queue: { ring: async (d) => void fifo.push(d) },
    flushPolicy: { bytes: 0, intervalMs: 0 },
    sweepIntervalMs: 3_600_000,
  });
  const units = async (op: () => Promise<unknown>) => {
    meter.reset();
    await op();
    const { readUnits, writeUnits, commands } = meter.snapshot().total;
    return { readUnits, writeUnits, commands };
  };
  const report = (what: string, u: { readUnits: number; writeUnits: number; commands: number }) => {
    figure(`${what}: write units`, u.writeUnits, "");
    figure(`${what}: read units`, u.readUnits, "");
    note(`  (${u.commands} DynamoDB commands)`);
  };
  try {
    console.log("DynamoDB units of a cancel (issue 9; DynamoDB Local, transactions computed from item sizes):");
    // Each case in a session that already has a settled exchange, as a cancel usually finds it.
    const at = (instance: string) => ({ agent: "bench", instance });
    const ask = (instance: string, body: string) => runtime.dispatch({ ...at(instance), message: { kind: "user", body } });

    const queued = await ask("queued", "never runs");
    fifo.length = 0;
    report("cancel of a queued head (settled at once: reservation, record, finalize)", await units(() => runtime.cancel(queued.submissionId, undefined, at("queued"))));

    const head = await ask("behind", "runs");
    const running = runtime.handleDoorbell(fifo.shift()!);
    while ((await store.getSubmission(head.submissionId)).status !== "running") await new Promise((r) => setTimeout(r, 20));
    const behind = await ask("behind", "queued behind a running head");
    fifo.length = 0;
    report("cancel of a queued submission behind a running head (reserved; its record follows the head's)", await units(() => runtime.cancel(behind.submissionId, undefined, at("behind"))));

    // The running head: wait for its text in the log, then cancel it.
    while (!(await store.readRecords(head.conversationId)).some((r) => r.kind === "assistant_text_delta")) await new Promise((r) => setTimeout(r, 20));
    let stopped: Promise<unknown> = Promise.resolve();
    report(
      "cancel of a running submission: the request (the flag on its state item)",
      await units(async () => {
        await runtime.cancel(head.submissionId, undefined, at("behind"));
        stopped = running;
      }),
    );
    report("  then its owner's stop and settlement, with the one behind it settled in turn", await units(() => stopped));
  } finally {
    await runtime.close();
    local.close();
  }
}
