/** SQLite's primary result code for "another connection holds the lock" (SQLITE_BUSY). */
const SQLITE_BUSY = 5;

/**
 * Another process held the database's write lock for longer than the busy timeout. Nothing was
 * written; the operation may be retried. Raised instead of waiting longer because the wait is
 * synchronous and blocks this process's event loop.
 */
export class SqliteStoreBusy extends Error {
  readonly code = "sqlite_busy";
  constructor(location: string, busyTimeoutMs: number, cause: unknown) {
    super(
      `sqlite store ${location} is locked by another connection (waited ${busyTimeoutMs} ms); nothing was written`,
      { cause },
    );
    this.name = "SqliteStoreBusy";
  }
}

/** True for SQLITE_BUSY and its extended codes (e.g. BUSY_SNAPSHOT = 517). */
export function isSqliteBusy(err: unknown): boolean {
  const errcode = (err as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === "number" && (errcode & 0xff) === SQLITE_BUSY;
}

/** SQLITE_CONSTRAINT_PRIMARYKEY / _UNIQUE: a key that must be unique already exists. */
export function isUniqueViolation(err: unknown): boolean {
  const errcode = (err as { errcode?: unknown } | null)?.errcode;
  return errcode === 1555 || errcode === 2067;
}
