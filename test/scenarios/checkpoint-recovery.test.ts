/**
 * Crash recovery from a log checkpoint (ADR 0018), embedded shape: a long conversation (its
 * settlements store checkpoints), then a submission whose process dies after its tool ran and
 * before the outcome landed; a new process over the same SQLite file recovers it from the
 * checkpoint. The same story with checkpoints switched off must give the same log (kinds and
 * payloads) and send the model exactly the same contexts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Message } from "@earendil-works/pi-ai";
import { afterAll, describe, expect, it } from "vitest";
import type { FaultPhase } from "../../src/ports/faults.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { keylessModel, streamBlocks } from "../../src/agent/block-stream.ts";
import { clockTool } from "../../src/agent/clock-tool.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { settleTicks } from "../support/runtime-kit.ts";
import { withoutCheckpoints } from "../support/store-variants.ts";

const LEASE_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), "checkpoint-recovery-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TURNS = 8;
const LONG = (i: number) => `reply ${i}: ` + "the durable log keeps every turn of the agent. ".repeat(150);

/** A model that replies at length, or calls the clock when asked to; every context it is sent is kept. */
function recordingModel(contexts: string[]): StreamFn {
  const model = keylessModel("checkpoint-recovery", "test");
  return (_m, context, options) => {
    // What the model is sent, without times (the two stories run on their own clocks).
    contexts.push(JSON.stringify(context.messages, (k, v) => (k === "timestamp" || k === "durationMs" ? undefined : v)));
    const messages = context.messages as Message[];
    const last = messages.at(-1);
    const asked = last?.role === "user" && JSON.stringify(last.content).includes("use the clock");
    let n = 0;
    for (const m of messages) if (m.role === "assistant") n++;
    return streamBlocks(model, () => (asked ? [{ type: "toolCall", id: `call-${n}`, name: "clock", arguments: {} }] : [{ type: "text", text: LONG(n) }]), {
      signal: options?.signal,
      chunkSize: 512,
    });
  };
}


async function story(name: string, checkpoints: boolean) {
  const path = join(dir, `${name}.db`);
  const clock = new ManualClock();
  const contexts: string[] = [];
  const stored: { at: string }[] = [];
  const open = () => {
    const store = openSqliteStore({ path, clock });
    if (!checkpoints) return withoutCheckpoints(store);
    return new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "readCheckpoint") {
          return async (conversationId: string) => {
            const checkpoint = await target.readCheckpoint(conversationId);
            if (checkpoint) stored.push({ at: checkpoint.at });
            return checkpoint;
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
  };
  const runtimeOver = (store: Store, faults?: (phase: FaultPhase, id: string) => void | Promise<void>): Runtime =>
    createRuntime({
      agents: { a: { initialize: () => ({ model: keylessModel("checkpoint-recovery", "test"), streamFn: recordingModel(contexts), tools: [clockTool(clock)] }) } },
      store,
      clock,
      leaseMs: LEASE_MS,
      flushPolicy: { bytes: 1024, intervalMs: 200 },
      sweepIntervalMs: 5_000,
      faults,
    });
  const address = { agent: "a", instance: "long" };
  let reached!: () => void;
  const atPhase = new Promise<void>((r) => (reached = r));
  const first = open();
  const crashed = runtimeOver(first, (phase, id) => {
    if (phase !== "tool_ran" || id !== "crash") return;
    reached();
    return new Promise<never>(() => {}); // the process dies here
  });
  await crashed.start();
  for (let i = 0; i < TURNS; i++) {
    const { submissionId } = await crashed.dispatch({ ...address, message: { kind: "user", body: `question ${i}` } });
    await crashed.wait(submissionId);
  }
  await crashed.dispatch({ ...address, dispatchId: "crash", message: { kind: "user", body: "please use the clock" } });
  await atPhase;
  await crashed.close({ abandon: true });

  const second = open();
  const recovered = runtimeOver(second);
  await recovered.start();
  const settled = recovered.wait("crash");
  await clock.advance(LEASE_MS + 1_000);
  await clock.advance(5_000);
  await settleTicks();
  await clock.advance(5_000);
  const outcome = await settled;
  const after = await recovered.dispatch({ ...address, message: { kind: "user", body: "and after it" } });
  await recovered.wait(after.submissionId);
  const conversation = await second.getConversation({ ...address, session: "default" });
  const log = await second.readRecords(conversation.id);
  await recovered.close();
  return { outcome, log, contexts, stored };
}

describe("crash recovery from a log checkpoint", () => {
  it("a run killed after its tool ran recovers from the checkpoint exactly as from the whole log", async () => {
    const withCheckpoints = await story("with", true);
    const without = await story("without", false);
    expect(withCheckpoints.stored.length, "rebuilds that read a stored checkpoint").toBeGreaterThan(2);
    expect(without.stored).toEqual([]);
    expect(withCheckpoints.outcome.status).toBe("succeeded");
    expect(withCheckpoints.outcome).toEqual(without.outcome);
    // Kinds and payloads, without times (message timestamps come from the wall clock).
    const shape = (log: typeof without.log) => JSON.parse(JSON.stringify(log.map((r) => [r.kind, r.payload]), (k, v) => (k === "timestamp" || k === "durationMs" ? undefined : v)));
    expect(shape(withCheckpoints.log), "the log, kinds and payloads").toEqual(shape(without.log));
    expect(withCheckpoints.log.some((r) => r.kind === "tool_outcome" && r.payload.isError === true), "the dangling call was answered").toBe(true);
    expect(withCheckpoints.contexts, "every context the model was sent").toEqual(without.contexts);
  });
});
