/** Two children settling at once wake their parent exactly once: memory and SQLite (DynamoDB: `subagent-race.aws.test.ts`). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, it } from "vitest";
import { systemClock } from "../../src/ports/clock.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { raceTwoChildren } from "../support/subagent-race.ts";

const dir = mkdtempSync(join(tmpdir(), "subagent-race-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("memory: two children's wakes racing (each twice) requeue and ring the parent once", async () => {
  await raceTwoChildren([createMemoryStore()], systemClock, 25);
});

it("SQLite: the same race over two connections to one file", async () => {
  const path = join(dir, "race.db");
  const a = openSqliteStore({ path });
  const b = openSqliteStore({ path });
  await raceTwoChildren([a, b], systemClock, 15);
  await a.close();
  await b.close();
});
