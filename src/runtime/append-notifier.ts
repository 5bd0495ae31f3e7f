import type { Store } from "../ports/store.ts";

type Listener = () => void;

/**
 * In-process broadcast of "this conversation has new records", so a live SSE tail in the same
 * process wakes at once instead of waiting for its poll. Appends from other processes are still
 * found by the tail's fallback poll.
 */
export class AppendNotifier {
  readonly #listeners = new Map<string, Set<Listener>>();

  /** Calls `listener` after every append to `conversationId`; returns the unsubscribe. */
  subscribe(conversationId: string, listener: Listener): () => void {
    let set = this.#listeners.get(conversationId);
    if (!set) this.#listeners.set(conversationId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(conversationId);
    };
  }

  notify(conversationId: string): void {
    const set = this.#listeners.get(conversationId);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener();
      } catch {
        // a listener's failure is its own business
      }
    }
  }

  /** A view of `store` that notifies after each successful append (records or inbox drain). */
  wrap(store: Store): Store {
    const notifier = this;
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function") return value;
        if (prop === "appendRecords") {
          return async (conversationId: string, ...rest: unknown[]) => {
            const out = await value.call(target, conversationId, ...rest);
            notifier.notify(conversationId);
            return out;
          };
        }
        if (prop === "drainInbox") {
          return async (...args: unknown[]) => {
            const out = await value.apply(target, args);
            if (Array.isArray(out) && out.length > 0) notifier.notify(out[0].conversationId);
            return out;
          };
        }
        return value.bind(target);
      },
    });
  }
}
