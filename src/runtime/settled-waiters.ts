import { RuntimeClosed } from "../errors.ts";
import { findSettledPayload } from "../engine/settlement.ts";
import type { Clock } from "../ports/clock.ts";
import type { SettledPayload } from "../protocol/records.ts";
import type { Store } from "../store/store.ts";
import type { Submission } from "../store/submission.ts";

/** How often a waiter looks at the store for a settlement this process did not see. */
const WAIT_POLL_MS = 250;

/**
 * The runtime's `wait`: who waits for which submission to settle. A settlement in this process
 * wakes its waiters at once (`settled`); every waiter also polls the store, so a wait survives
 * restarts and sees settlements made by another process. `close` rejects every pending wait (no
 * poll outlives the runtime).
 */
export class SettledWaiters {
  readonly #waiters = new Map<string, Set<(payload: SettledPayload) => void>>();
  readonly #pendingWaits = new Set<(err: Error) => void>();
  #closed = false;

  private readonly store: Store;
  private readonly clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.store = store;
    this.clock = clock;
  }

  /** Wakes the submission's waiters in this process (the engine's `onSettled`). */
  settled(submissionId: string, payload: SettledPayload): void {
    const set = this.#waiters.get(submissionId);
    if (!set) return;
    this.#waiters.delete(submissionId);
    for (const resolve of set) resolve(payload);
  }

  /** Rejects every pending wait, and every later one, with `RuntimeClosed`. */
  close(): void {
    this.#closed = true;
    for (const reject of [...this.#pendingWaits]) reject(new RuntimeClosed());
  }

  /** Resolves with the settled payload; survives restarts (falls back to polling the store). */
  wait(submissionId: string, options: { signal?: AbortSignal } = {}): Promise<SettledPayload> {
    const { store, clock } = this;
    const waiters = this.#waiters;
    const pendingWaits = this.#pendingWaits;
    const signal = options.signal;
    const pollStop = new AbortController();
    let listeners = waiters.get(submissionId);
    if (!listeners) waiters.set(submissionId, (listeners = new Set()));
    const waiting = listeners;
    return new Promise<SettledPayload>((resolve, reject) => {
      let done = false;
      const finish = (settleWait: () => void) => {
        if (done) return;
        done = true;
        waiting.delete(onSettled);
        pendingWaits.delete(onClose);
        if (waiting.size === 0 && waiters.get(submissionId) === waiting) waiters.delete(submissionId);
        pollStop.abort();
        signal?.removeEventListener("abort", onAbort);
        settleWait();
      };
      const onSettled = (payload: SettledPayload) => finish(() => resolve(payload));
      const onAbort = () => finish(() => reject(signal?.reason ?? new Error("wait aborted")));
      const onClose = (err: Error) => finish(() => reject(err));
      if (this.#closed) return onClose(new RuntimeClosed());
      pendingWaits.add(onClose);
      waiting.add(onSettled);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      // The durable path: works across processes and restarts.
      (async () => {
        for (;;) {
          const sub: Submission = await store.getSubmission(submissionId);
          if (sub.status === "settled") {
            // Finalized with its record's payload; older rows and cancels: look in the log.
            const payload = sub.outcome ?? (await findSettledPayload({ store }, sub.conversationId, sub.id));
            return onSettled(payload ?? { status: "failed", error: sub.lastError || "settled without a submission_settled record" });
          }
          await clock.sleep(WAIT_POLL_MS, pollStop.signal);
        }
      })().catch((err) => {
        if (!pollStop.signal.aborted) finish(() => reject(err));
      });
    });
  }
}
