import type { Clock } from "../ports/clock.ts";
import { systemClock } from "../ports/clock.ts";
import type { ConsumableQueue, Doorbell, DoorbellHandler } from "../ports/queue.ts";

/**
 * The embedded shape's work queue. Event-driven: a ring delivers on the next microtask when its
 * group is free, so the hot path has no polling tick. Groups (sessions) are FIFO and deliver one
 * doorbell at a time; different groups run concurrently up to `concurrency`. A handler that
 * throws or asks to retry gets the doorbell back after a delay read from the Clock. Nothing here
 * is durable: after a crash the sweep re-rings what the store says is runnable.
 */
export class InProcessQueue implements ConsumableQueue {
  readonly #clock: Clock;
  readonly #groups = new Map<string, Doorbell[]>();
  readonly #busy = new Set<string>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #timers = new AbortController();
  #handler: DoorbellHandler | undefined;
  #concurrency = 64;
  #closed = false;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  async ring(doorbell: Doorbell, options: { delayMs?: number } = {}): Promise<void> {
    if (this.#closed) return;
    const delay = options.delayMs ?? 0;
    if (delay > 0) {
      this.#clock.sleep(delay, this.#timers.signal).then(
        () => this.#enqueue(doorbell),
        () => {}, // closed while waiting
      );
      return;
    }
    this.#enqueue(doorbell);
  }

  start(handler: DoorbellHandler, options: { concurrency?: number } = {}): void {
    this.#handler = handler;
    this.#concurrency = options.concurrency ?? this.#concurrency;
    for (const group of this.#groups.keys()) this.#pump(group);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#timers.abort();
    this.#groups.clear();
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Doorbells waiting (not in flight), for tests and metrics. */
  get depth(): number {
    let n = 0;
    for (const q of this.#groups.values()) n += q.length;
    return n;
  }

  #enqueue(doorbell: Doorbell): void {
    if (this.#closed) return;
    const queue = this.#groups.get(doorbell.group);
    if (queue) {
      // A second ring for a submission already waiting adds nothing: the consumer re-reads state.
      if (!queue.some((d) => d.submissionId === doorbell.submissionId)) queue.push(doorbell);
    } else {
      this.#groups.set(doorbell.group, [doorbell]);
    }
    this.#pump(doorbell.group);
  }

  #pump(group: string): void {
    const handler = this.#handler;
    if (!handler || this.#closed || this.#busy.has(group)) return;
    if (this.#busy.size >= this.#concurrency) return;
    const queue = this.#groups.get(group);
    const doorbell = queue?.shift();
    if (!doorbell) return;
    if (queue!.length === 0) this.#groups.delete(group);
    this.#busy.add(group);
    const run = this.#deliver(handler, doorbell).finally(() => {
      this.#busy.delete(group);
      this.#inFlight.delete(run);
      this.#pump(group);
      // A slot freed: give waiting groups their turn.
      for (const other of this.#groups.keys()) {
        if (this.#busy.size >= this.#concurrency) break;
        this.#pump(other);
      }
    });
    this.#inFlight.add(run);
  }

  async #deliver(handler: DoorbellHandler, doorbell: Doorbell): Promise<void> {
    try {
      const outcome = await handler(doorbell);
      if (outcome.kind === "retry") await this.ring(doorbell, { delayMs: Math.max(1, outcome.delayMs) });
    } catch {
      // A handler that throws is a bug or a transient fault; deliver again shortly.
      await this.ring(doorbell, { delayMs: 1_000 });
    }
  }
}
