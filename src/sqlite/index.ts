/**
 * `resolute-harness/sqlite`: the embedded store on Node 22's built-in `node:sqlite` (no native
 * build). One file holds submissions, conversation logs, attachments and the inbox; a `kill -9`
 * loses nothing that was acknowledged. Several processes may open it (writers serialize on
 * SQLite's lock, see `DEFAULT_BUSY_TIMEOUT_MS`).
 *
 * @example
 * ```ts
 * import { createRuntime, localModel } from "resolute-harness";
 * import { openSqliteStore } from "resolute-harness/sqlite";
 *
 * const store = openSqliteStore({ path: "./harness-data/harness.db" });
 * const runtime = createRuntime({ store, agents: { echo: { initialize: () => localModel() } } });
 * await runtime.start(); // a restart over the same file finishes what a crash interrupted
 * ```
 *
 * @module
 */
export {
  DEFAULT_BUSY_TIMEOUT_MS,
  openSqliteStore,
  SqliteStore,
  type SqliteStoreOptions,
} from "./sqlite-store.ts";
export { SqliteStoreBusy } from "./busy.ts";
export { SqliteStoreOpenFailed } from "./open-failed.ts";
export { SCHEMA_VERSION } from "./schema.ts";
