/**
 * Store wrappers and text for tests and benches that compare a feature on and off (the
 * checkpoint tests and the rebuild-cost figures).
 */
import type { Store } from "../../src/store/store.ts";

/** The store with log checkpoints switched off: what every rebuild read before ADR 0018. */
export function withoutCheckpoints(store: Store): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "readCheckpoint") return async () => undefined;
      if (prop === "writeCheckpoint") return async () => {};
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * `length` characters of text that compresses about as prose does: words drawn by a fixed LCG
 * from `seed`, with a number now and then and sentence breaks (stored sizes stay realistic).
 */
export function proseLike(length: number, seed: number): string {
  const words = "the a harness log turn durable record agent model tool session store batch item read write unit cost lease sweep claim epoch fence queue doorbell conversation message reply stream delta flush".split(" ");
  let x = seed;
  let text = "";
  while (text.length < length) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    text += `${words[x % words.length]}${x % 13 === 0 ? ` ${x % 1000}` : ""}${x % 7 === 0 ? ". " : " "}`;
  }
  return text.slice(0, length);
}
