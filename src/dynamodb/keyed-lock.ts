/**
 * Serializes async work per key inside one process. Appends to one conversation from one store
 * instance queue up here instead of racing each other's head condition: the answer is the same,
 * but without a storm of refused (and billed) transactions. Writers in other processes still
 * race through the head condition.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `work` after every earlier `run` with the same key has settled. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const current = previous.then(work, work);
    const tail = current.catch(() => undefined);
    this.#tails.set(key, tail);
    try {
      return await current;
    } finally {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
