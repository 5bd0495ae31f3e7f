/**
 * The shared store conformance suite against the SQLite store: once on a fresh temp file per
 * case (the shipped configuration: WAL, a second connection's view of the same file), once on
 * `:memory:`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { describeStoreConformance } from "../../../src/store/conformance/index.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";

const dir = mkdtempSync(join(tmpdir(), "sqlite-conformance-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

describeStoreConformance("sqlite (file)", async (clock) =>
  openSqliteStore({ path: join(dir, `case-${++files}.db`), clock }),
);

describeStoreConformance("sqlite (:memory:)", async (clock) => openSqliteStore({ path: ":memory:", clock }));
