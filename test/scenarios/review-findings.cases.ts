/**
 * The outside review's findings on the engine (issue 14), as cases run against every shape: the
 * embedded stores (memory, SQLite) in `review-findings.test.ts`, DynamoDB Local in
 * `review-findings.aws.test.ts`. Each case forces the interleaving the review found: a writer
 * held between two steps, a write that fails or never returns, a duplicate doorbell.
 */
import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import type { Doorbell, WorkQueue } from "../../src/ports/queue.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import type { RuntimeConfig } from "../../src/runtime/runtime-config.ts";
import { scriptedAgent } from "../support/runtime-kit.ts";

/** The data of one shape, opened by several processes (or Lambdas). */
export interface ShapeData {
  /** One more process's store on the data. */
  store(): Store;
  /** A process's store whose log writes a case can hold, fail or hang. */
  faulty(): FaultyStore;
  dispose(): Promise<void>;
}

export interface FaultyStore {
  store: Store;
  /** The next log write waits until `release` (`reached` resolves once it waits). */
  holdNextWrite(): { reached: Promise<void>; release: () => void };
  /** The next log write fails with an error that is not retried. */
  failNextWrite(): void;
  /** Every log write from now on never returns. */
  hangWrites(): void;
}

const SESSION = "assistant/w/default";
const user = (body: string) => ({ kind: "user" as const, body });
const settledOf = (records: ConversationRecord[], submissionId: string) =>
  records.filter((r) => r.kind === "submission_settled" && r.submissionId === submissionId);
const realPause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A queue that only records its doorbells (the case delivers them). */
function recordingQueue(): WorkQueue & { rung: Doorbell[] } {
  const rung: Doorbell[] = [];
  return { rung, ring: async (d) => void rung.push(d) };
}

export function describeReviewFindings(shape: string, open: (clock: ManualClock) => Promise<ShapeData>): void {
  describe(`review findings (${shape})`, () => {
    const runtime = (clock: ManualClock, store: Store, queue: WorkQueue, definition: AgentDefinition, extra: Partial<RuntimeConfig> = {}) =>
      createRuntime({ agents: { assistant: definition }, store, queue, clock, leaseMs: 30_000, sweepIntervalMs: 3_600_000, ...extra });

    it("1: a settler that stalls past the grace writes no second settlement record after the recoverer's (and the next run's)", async () => {
      const clock = new ManualClock();
      const data = await open(clock);
      const queue = recordingQueue();
      const { definition } = scriptedAgent([[{ text: "P done" }], [{ text: "Q done" }]]);
      const settled: string[] = [];
      const observers = [(e: HarnessEvent) => void (e.type === "submission_settled" && settled.push(e.correlation.submissionId!))];
      const w = data.faulty();
      let held: { reached: Promise<void>; release: () => void } | undefined;
      let reserved!: () => void;
      const atReserve = new Promise<void>((r) => (reserved = r));
      // W: reserves the settlement of P, then stalls before its settlement record is written.
      const worker = runtime(clock, w.store, queue, definition, {
        leaseMs: 1_000,
        observers,
        faults: (phase) => {
          if (phase !== "reserved") return;
          held = w.holdNextWrite();
          reserved();
        },
      });
      const store = data.store();
      const recoverer = runtime(clock, store, queue, definition, { leaseMs: 1_000, observers });
      const p = await recoverer.dispatch({ agent: "assistant", instance: "w", message: user("p") });
      const q = await recoverer.dispatch({ agent: "assistant", instance: "w", message: user("q") });
      const stalled = worker.handleDoorbell({ submissionId: p.submissionId, group: SESSION });
      await atReserve;
      await held!.reached;

      // Past the grace: the sweep finds no record, settles P with the outcome its reservation
      // stored (issue 13: a finished run is never reported as failed) and rings Q, which runs.
      await clock.advance(1_001);
      expect((await recoverer.sweep()).reconciled).toBe(1);
      expect(await recoverer.handleDoorbell({ submissionId: q.submissionId, group: SESSION })).toEqual({ kind: "ack" });
      expect((await store.getSubmission(q.submissionId)).status).toBe("settled");

      held!.release();
      await stalled;
      const log = await recoverer.records(p.conversationId);
      expect(settledOf(log, p.submissionId).map((r) => r.payload), "one settlement of P").toEqual([expect.objectContaining({ status: "succeeded" })]);
      expect(log.at(-1)).toMatchObject({ kind: "submission_settled", submissionId: q.submissionId });
      expect(await recoverer.wait(p.submissionId), "wait answers what the log says").toMatchObject({ status: "succeeded" });
      expect(settled.filter((id) => id === p.submissionId), "observers hear P settle once").toHaveLength(1);
      await worker.close();
      await recoverer.close();
      await data.dispose();
    });

    it("2: a worker whose store call never returns stops renewing its lease, so the sweep reclaims it and another run settles it", async () => {
      const clock = new ManualClock();
      const data = await open(clock);
      const queue = recordingQueue();
      // Turn and tool calls bounded at a minute: silence from the store beyond that (and a lease) is a hang.
      const { definition } = scriptedAgent([[{ text: "done" }]], { turnTimeoutMs: 60_000, toolTimeoutMs: 60_000 });
      const w = data.faulty();
      let gaveUp = false;
      const observers = [(e: HarnessEvent) => void (e.type === "recovery" && e.detail.includes("left to lapse") && (gaveUp = true))];
      const worker = runtime(clock, w.store, queue, definition, { observers });
      const other = runtime(clock, data.store(), queue, definition);
      const { submissionId } = await other.dispatch({ agent: "assistant", instance: "w", message: user("hi") });
      w.hangWrites();
      void worker.handleDoorbell({ submissionId, group: SESSION });
      // Three minutes pass; the heartbeat beats every 10 s, each beat's renewal done before the
      // clock moves on (the heartbeat is the only sleeper).
      for (let i = 0; i < 18; i++) {
        while (clock.pendingSleepers === 0 && !gaveUp) await realPause(2);
        await clock.advance(10_000);
      }
      while (clock.pendingSleepers === 0 && !gaveUp) await realPause(2);
      expect((await other.sweep()).reclaimed, "the lease lapsed").toBe(1);
      expect(await other.handleDoorbell({ submissionId, group: SESSION })).toEqual({ kind: "ack" });
      expect(await other.wait(submissionId)).toMatchObject({ status: "succeeded" });
      await worker.close({ abandon: true });
      await other.close();
      await data.dispose();
    });

    it("6b: a head promoted by its predecessor's settlement is not stale to the sweep a moment later", async () => {
      const clock = new ManualClock();
      const data = await open(clock);
      const queue = recordingQueue();
      const { definition } = scriptedAgent([[{ text: "a" }], [{ text: "b" }]]);
      const rt = runtime(clock, data.store(), queue, definition);
      const a = await rt.dispatch({ agent: "assistant", instance: "w", message: user("a") });
      await rt.dispatch({ agent: "assistant", instance: "w", message: user("b") });
      await clock.advance(10_000); // a runs long; b waits behind it
      await rt.handleDoorbell({ submissionId: a.submissionId, group: SESSION });
      queue.rung.length = 0;
      await clock.advance(1_000);
      expect((await rt.sweep({ staleQueuedMs: 5_000 })).rerung, "b became the head 1 s ago").toBe(0);
      expect(queue.rung).toEqual([]);
      await rt.close();
      await data.dispose();
    });

    it("6b: duplicate doorbells are not carried down a session's queue (one delivery per doorbell)", async () => {
      const clock = new ManualClock();
      const data = await open(clock);
      const queue = recordingQueue();
      const fifo = queue.rung;
      const { definition } = scriptedAgent(Array.from({ length: 5 }, (_, i) => [{ text: `reply ${i}` }]));
      const store = data.store();
      const rt = runtime(clock, store, queue, definition);
      const ids: string[] = [];
      const send = async () => ids.push((await rt.dispatch({ agent: "assistant", instance: "w", message: user(`m${ids.length}`) })).submissionId);
      await send();
      fifo.push({ ...fifo[0]! }); // the queue delivers the first doorbell twice
      let deliveries = 0;
      while (fifo.length > 0) {
        deliveries++;
        expect(await rt.handleDoorbell(fifo.shift()!)).toEqual({ kind: "ack" });
        // The client sends its next message once the previous one has settled.
        if (ids.length < 5 && (await store.getSubmission(ids.at(-1)!)).status === "settled") {
          await send();
          if (ids.length === 3) fifo.push({ ...fifo.at(-1)! });
        }
      }
      for (const id of ids) expect((await store.getSubmission(id)).status).toBe("settled");
      expect(deliveries, "5 submissions + 2 duplicate doorbells").toBe(7);
      await rt.close();
      await data.dispose();
    });

    it("7: a first submission that fails before its drive still opens the log with conversation_created", async () => {
      const clock = new ManualClock();
      const data = await open(clock);
      const queue = recordingQueue();
      const failing: AgentDefinition = {
        initialize: () => {
          throw new Error("no model configured");
        },
      };
      const f = data.faulty();
      const rt = runtime(clock, f.store, queue, failing);
      const request = { agent: "assistant", instance: "w", dispatchId: "d-1", message: user("hi") };
      f.failNextWrite(); // the admission's append of conversation_created
      await expect(rt.dispatch(request)).rejects.toThrow();
      const { submissionId, conversationId } = await rt.dispatch(request);
      await rt.handleDoorbell({ submissionId, group: SESSION });
      expect(await rt.wait(submissionId)).toMatchObject({ status: "failed", errorCode: "run_failed" });
      expect((await rt.records(conversationId)).map((r) => r.kind)).toEqual(["conversation_created", "submission_settled"]);
      await rt.close();
      await data.dispose();
    });
  });
}

/**
 * The faults a case can put on a store's log writes: `write` runs one write (`send`) as the
 * armed fault says; `failure` is the error a failed write throws (one the store does not retry).
 */
export function writeFaults(failure: () => Error): {
  control: Omit<FaultyStore, "store">;
  write: <T>(send: () => Promise<T>) => Promise<T>;
} {
  let next: ((send: () => Promise<unknown>) => Promise<unknown>) | undefined;
  let hang = false;
  return {
    write: <T>(send: () => Promise<T>): Promise<T> => {
      if (hang) return new Promise<T>(() => {});
      const fault = next;
      next = undefined;
      return (fault ? fault(send) : send()) as Promise<T>;
    },
    control: {
      holdNextWrite() {
        let reached!: () => void;
        let release!: () => void;
        const reachedP = new Promise<void>((r) => (reached = r));
        const gate = new Promise<void>((r) => (release = r));
        next = async (send) => {
          reached();
          await gate;
          return send();
        };
        return { reached: reachedP, release };
      },
      failNextWrite() {
        next = async () => {
          throw failure();
        };
      },
      hangWrites() {
        hang = true;
      },
    },
  };
}

/** A proxy of `store` whose `appendRecords` (the log writes) the case can hold, fail or hang. */
export function faultyAppends(store: Store): FaultyStore {
  const faults = writeFaults(() => new Error("store unavailable"));
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      if (prop !== "appendRecords") return value.bind(target);
      return (...args: unknown[]) => faults.write(() => value.apply(target, args) as Promise<unknown>);
    },
  });
  return { store: proxy, ...faults.control };
}
