import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";

it("opening a SQLite store prints no 'SQLite is an experimental feature' warning; other warnings still go out", () => {
  const store = join(import.meta.dirname, "../../../src/sqlite/index.ts");
  const script = `
    const { openSqliteStore } = await import(${JSON.stringify(store)});
    openSqliteStore({ path: ":memory:" });
    process.emitWarning("another experimental thing", "ExperimentalWarning");
    console.log("opened");`;
  // No --disable-warning: what the app of a user prints.
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toBe("opened\n");
  expect(run.stderr).toContain("ExperimentalWarning: another experimental thing");
  expect(run.stderr).not.toContain("SQLite");
});
