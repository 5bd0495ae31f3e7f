/**
 * Time, as the engine sees it. Every lease, timeout, backoff and flush decision reads the clock
 * through this port, so tests can drive time instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The wall clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, ms));
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

interface Sleeper {
  wakeAt: number;
  resolve: () => void;
}

/**
 * A clock that only moves when told to. `advance(ms)` wakes every sleeper whose time has come,
 * in wake-time order. Time may also be set backwards (`set`) to test clock skew.
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const sleeper: Sleeper = {
        wakeAt: this.#now + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      if (ms <= 0) return queueMicrotask(sleeper.resolve);
      this.#sleepers.push(sleeper);
    });
  }

  /** Moves time forward and wakes due sleepers; awaits a macrotask so woken code can run. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      const due = this.#sleepers
        .filter((s) => s.wakeAt <= target)
        .sort((a, b) => a.wakeAt - b.wakeAt)[0];
      if (!due) break;
      this.#now = Math.max(this.#now, due.wakeAt);
      this.#sleepers = this.#sleepers.filter((s) => s !== due);
      due.resolve();
      await new Promise((r) => setImmediate(r));
    }
    this.#now = target;
    await new Promise((r) => setImmediate(r));
  }

  /** Jumps to an absolute time (may go backwards) without waking anyone. */
  set(ms: number): void {
    this.#now = ms;
  }

  /** Number of pending sleepers (for tests that wait until the code under test is parked). */
  get pendingSleepers(): number {
    return this.#sleepers.length;
  }
}
