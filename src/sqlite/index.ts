/**
 * `resolute-harness/sqlite`: the embedded store on Node 22's built-in `node:sqlite` (no native
 * build). One file holds submissions, conversation logs, attachments and the inbox; several
 * processes may open it (writers serialize on SQLite's lock, see `DEFAULT_BUSY_TIMEOUT_MS`).
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
