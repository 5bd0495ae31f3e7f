import type { Store } from "../store/store.ts";

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
    const appendRecords: Store["appendRecords"] = async (conversationId, drafts, options) => {
      const out = await store.appendRecords(conversationId, drafts, options);
      this.notify(conversationId);
      return out;
    };
    const drainInbox: Store["drainInbox"] = async (request) => {
      const out = await store.drainInbox(request);
      if (out.length > 0) this.notify(out[0]!.conversationId);
      return out;
    };
    // Methods are bound once, not on every access: the store sits on the engine's hot path.
    const bound = new Map<PropertyKey, unknown>([
      ["appendRecords", appendRecords],
      ["drainInbox", drainInbox],
    ]);
    return new Proxy(store, {
      get(target, prop) {
        const cached = bound.get(prop);
        if (cached !== undefined) return cached;
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        const method = value.bind(target);
        bound.set(prop, method);
        return method;
      },
    });
  }
}
