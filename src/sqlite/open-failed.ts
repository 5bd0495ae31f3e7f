/**
 * The store's file could not be opened: its folder could not be created, or SQLite refused the
 * path (a folder, no permission, a read-only file system). `path` is the absolute path tried;
 * `cause` is the underlying error.
 */
export class SqliteStoreOpenFailed extends Error {
  readonly code = "sqlite_open_failed";
  readonly path: string;
  constructor(path: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`cannot open sqlite store at ${path}: ${reason}`, { cause });
    this.name = "SqliteStoreOpenFailed";
    this.path = path;
  }
}
