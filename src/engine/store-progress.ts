import type { AttemptContext } from "./engine-context.ts";

/**
 * When the attempt's store calls last came back (answered or failed). A healthy drive hears from
 * the store at least once per model turn or tool call (each is bounded by its timeout); longer
 * silence means a call that will never return, and the heartbeat then stops renewing.
 */
export class StoreProgress {
  readonly #ctx: AttemptContext;
  #at: number;
  #boundMs = 0;

  constructor(ctx: AttemptContext, turnTimeoutMs: number, toolTimeoutMs: number) {
    this.#ctx = ctx;
    this.#at = ctx.clock.now();
    this.bound(turnTimeoutMs, toolTimeoutMs);
  }

  /** Silence longer than the longest turn or tool call, plus a lease, counts as stalled. */
  bound(turnTimeoutMs: number, toolTimeoutMs: number): void {
    this.#boundMs = Math.max(turnTimeoutMs, toolTimeoutMs) + this.#ctx.leaseMs;
  }

  get stalled(): boolean {
    return this.#ctx.clock.now() - this.#at > this.#boundMs;
  }

  /** `store` with every call's return noted. */
  track<S extends object>(store: S): S {
    const note = () => {
      this.#at = this.#ctx.clock.now();
    };
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const out = value.apply(target, args);
          if (out instanceof Promise) out.then(note, note);
          return out;
        };
      },
    });
  }
}
