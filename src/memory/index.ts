/** The in-memory Store adapter (`resolute-harness/memory`). */
export { createMemoryStore, MemoryStore, type MemoryStoreOptions } from "./memory-store.ts";
