/**
 * `resolute-harness/memory`: a store that keeps everything in the process's memory. For tests and
 * throwaway runs: it passes the same conformance suite as the durable stores, but a restart forgets
 * everything.
 *
 * @example
 * ```ts
 * import { createRuntime, localModel } from "resolute-harness";
 * import { createMemoryStore } from "resolute-harness/memory";
 *
 * const runtime = createRuntime({ store: createMemoryStore(), agents: { echo: { initialize: () => localModel() } } });
 * await runtime.start();
 * const { submissionId } = await runtime.dispatch({ agent: "echo", instance: "t1", message: { kind: "user", body: "hi" } });
 * console.log(await runtime.wait(submissionId));
 * await runtime.close();
 * ```
 *
 * @module
 */
export { createMemoryStore, MemoryStore, type MemoryStoreOptions } from "./memory-store.ts";
