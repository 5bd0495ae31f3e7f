/** The review's engine findings (issue 14) in the embedded shape: the memory and SQLite stores. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import type { Store } from "../../src/store/store.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { describeReviewFindings, faultyAppends } from "./review-findings.cases.ts";

describeReviewFindings("memory", async (clock) => {
  const store = createMemoryStore({ clock });
  return { store: () => store, faulty: () => faultyAppends(store), dispose: async () => {} };
});

const dir = mkdtempSync(join(tmpdir(), "review-findings-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

describeReviewFindings("sqlite, one store per process", async (clock) => {
  const path = join(dir, `store-${++files}.db`);
  const opened: Store[] = [];
  const open = () => {
    const store = openSqliteStore({ path, clock });
    opened.push(store);
    return store;
  };
  return {
    store: open,
    faulty: () => faultyAppends(open()),
    dispose: async () => {
      for (const store of opened) await store.close?.();
    },
  };
});
