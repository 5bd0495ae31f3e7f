/**
 * Every public entry (package.json `exports`) opens with a module comment whose `@example` is code
 * a user can paste: each example type-checks as written against this repository's sources, and
 * the keyless ones run (issue 25: "every public entry has a module comment with a runnable example").
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, expect, it } from "vitest";
import { moduleExamples, packageSources, repoRoot, resolveHookModule, typeErrors } from "../../support/package-snippets.ts";

// Inside the repository (build/ is ignored), so the examples' own imports (the AWS SDK, aws-cdk-lib,
// @hono/node-server: peers a user installs) resolve from its node_modules.
mkdirSync(join(repoRoot, "build"), { recursive: true });
const dir = mkdtempSync(join(repoRoot, "build", "entry-examples-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sources = packageSources();
const fileOf = (entry: string) => `${entry.replace(/[^a-z0-9]+/gi, "-")}.ts`;

it("every public entry documents itself with an example that type-checks", () => {
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "my-app", private: true, type: "module" }));
  const files: string[] = [];
  for (const [entry, source] of Object.entries(sources)) {
    const examples = moduleExamples(source);
    expect(examples.length, `${entry} (${source}) has an @example in its module comment`).toBeGreaterThan(0);
    examples.forEach((code, i) => {
      const file = join(dir, `${i}-${fileOf(entry)}`);
      writeFileSync(file, code);
      files.push(file);
    });
  }
  expect(typeErrors(files, sources)).toEqual([]);
}, 300_000);

it.each(["resolute-harness", "resolute-harness/memory"])("the example of %s runs as written", (entry) => {
  const file = join(dir, `run-${fileOf(entry)}`);
  writeFileSync(file, moduleExamples(sources[entry]!)[0]!);
  writeFileSync(join(dir, "resolve-package.mjs"), resolveHookModule(sources));
  const run = spawnSync(process.execPath, ["--disable-warning=ExperimentalWarning", "--import", "./resolve-package.mjs", file], {
    cwd: dir,
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  expect(run.stdout).toMatch(/succeeded/);
}, 90_000);

it("the API reference (`npm run build` runs TypeDoc) covers exactly the package's entries", () => {
  const config = JSON.parse(readFileSync(join(repoRoot, "typedoc.json"), "utf8")) as { entryPoints: string[] };
  const entries = Object.values(sources).map((file) => relative(repoRoot, file).split("\\").join("/"));
  expect([...config.entryPoints].sort()).toEqual(entries.sort());
});
