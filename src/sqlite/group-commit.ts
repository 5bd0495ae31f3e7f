/**
 * Group commit for the SQLite store (ADR 0022): the write transactions that arrive in one turn of
 * the event loop share one `BEGIN IMMEDIATE … COMMIT`, each inside its own savepoint.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** The statements a group runs around its members (prepared once, with the store's others). */
export interface GroupStatements {
  readonly begin: StatementSync;
  readonly commit: StatementSync;
  readonly rollback: StatementSync;
  readonly savepoint: StatementSync;
  readonly release: StatementSync;
  readonly rollbackToSavepoint: StatementSync;
}

interface Member {
  readonly fn: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

// Taken at load: a test that fakes timers later must not stall the store's commits.
const nextTurn = setImmediate;

/**
 * Collects write transactions and runs them together once per event-loop turn (`setImmediate`:
 * after the timers and I/O callbacks of the turn, so the writes of every session that progressed
 * in it share one commit). A commit costs a WAL append and its bookkeeping; one per group instead
 * of one per write is most of what a store operation cost.
 *
 * - Order: members run in call order, each seeing the writes of those before it.
 * - Isolation of failures: each member runs in a savepoint (when the group has more than one); a
 *   member that throws is rolled back alone and its caller gets the error, the others commit.
 * - Durability: every caller, failed or not, is answered after the group's `COMMIT` (or its
 *   failure): no caller sees success for a write that is not committed, so `kill -9` loses only
 *   writes nobody was told about. A failed `BEGIN` or `COMMIT` fails every member.
 * - Readers of this connection run between groups, never inside one: they see only committed
 *   state.
 */
export class GroupCommit {
  readonly #db: DatabaseSync;
  readonly #sql: GroupStatements;
  /** Maps an error of `BEGIN`, `COMMIT` or a member before its caller sees it (busy → `SqliteStoreBusy`). */
  readonly #mapError: (err: unknown) => unknown;
  #queue: Member[] = [];
  #scheduled = false;
  /** Groups committed and members run (for tests and benchmarks). */
  groups = 0;
  members = 0;

  constructor(db: DatabaseSync, sql: GroupStatements, mapError: (err: unknown) => unknown) {
    this.#db = db;
    this.#sql = sql;
    this.#mapError = mapError;
  }

  /** Queues `fn` for the next group; resolves with its result once the group committed. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        nextTurn(() => this.flush());
      }
    });
  }

  /** Runs the queued members now (the scheduled turn, or a close that must not drop them). */
  flush(): void {
    this.#scheduled = false;
    const group = this.#queue;
    if (group.length === 0) return;
    this.#queue = [];
    if (!this.#db.isOpen) {
      for (const m of group) m.reject(new Error("the SQLite store is closed; nothing was written"));
      return;
    }
    try {
      this.#sql.begin.run();
    } catch (err) {
      for (const m of group) m.reject(this.#mapError(err));
      return;
    }
    let outcomes: Outcome[] | undefined;
    try {
      outcomes = group.length === 1 ? this.#runAlone(group[0]!) : this.#runEach(group);
      if (outcomes === undefined) return;
      this.#sql.commit.run();
    } catch (err) {
      // A savepoint, release, rollback or the COMMIT itself failed: nothing of the group is
      // committed, and every caller hears it (a second rejection of an answered one is a no-op).
      this.#abandon();
      for (const m of group) m.reject(this.#mapError(err));
      return;
    }
    this.groups++;
    this.members += group.length;
    for (let i = 0; i < group.length; i++) {
      const o = outcomes[i]!;
      if (o.ok) group[i]!.resolve(o.value);
      else group[i]!.reject(o.error);
    }
  }

  /** Rolls back what is left of the transaction after a failure of the group's own statements. */
  #abandon(): void {
    try {
      if (this.#db.isTransaction) this.#sql.rollback.run();
    } catch {
      // The connection already ended it.
    }
  }

  /** A group of one needs no savepoint: a throw rolls the transaction back (nothing else is in it). */
  #runAlone(m: Member): Outcome[] | undefined {
    try {
      return [{ ok: true, value: m.fn() }];
    } catch (err) {
      if (this.#db.isTransaction) this.#sql.rollback.run();
      m.reject(this.#mapError(err));
      return undefined;
    }
  }

  /** Each member in its savepoint; undefined when a failure ended the whole transaction (all were answered). */
  #runEach(group: Member[]): Outcome[] | undefined {
    const outcomes: Outcome[] = [];
    for (const m of group) {
      this.#sql.savepoint.run();
      try {
        outcomes.push({ ok: true, value: m.fn() });
        this.#sql.release.run();
      } catch (err) {
        if (!this.#db.isTransaction) {
          // SQLite ended the transaction itself (an I/O or full-disk error): the earlier members'
          // writes are gone with it, so none of them succeeded.
          const failure = this.#mapError(err);
          for (const other of group) other.reject(failure);
          return undefined;
        }
        this.#sql.rollbackToSavepoint.run();
        this.#sql.release.run();
        outcomes.push({ ok: false, error: this.#mapError(err) });
      }
    }
    return outcomes;
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
