/**
 * The Lambda bundles' build options (issue 24's review): every bundle carries the result-schema
 * thread's entry beside `index.mjs`, so a caller's schema compiles on that thread, under its
 * deadline and a heap ceiling cut to the function's memory, and never on the function's only
 * thread (it did: the bundles had no worker entry, and compiled inline with no deadline).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { LAMBDA_ENTRY_FILE, lambdaBuildOptions, RESULT_SCHEMA_WORKER_FILE, staticClosure } from "../../../src/cdk/lambda-bundling.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));

describe("Lambda bundling", () => {
  it("bundles the result-schema thread's entry: a lazily loaded checker finds it and runs schemas on the thread", async () => {
    const outdir = mkdtempSync(join(tmpdir(), "harness-worker-"));
    try {
      const result = await build(lambdaBuildOptions({ entry: fixture("result-schema-handler.mjs"), agentsEntry: fixture("agents.ts"), outdir, sourceMap: false }));
      expect(existsSync(join(outdir, RESULT_SCHEMA_WORKER_FILE))).toBe(true);
      // The worker is its own entry: nothing of it is parsed at the handler's cold start.
      const entry = Object.keys(result.metafile.outputs).find((p) => p.endsWith(`/${LAMBDA_ENTRY_FILE}`))!;
      expect(staticClosure(result.metafile, entry).some((p) => p.endsWith(RESULT_SCHEMA_WORKER_FILE))).toBe(false);

      const run = await promisify(execFile)(
        join(repoRoot, "node_modules/.bin/node"),
        [
          "--input-type=module",
          "-e",
          `const m = await import(${JSON.stringify(pathToFileURL(join(outdir, LAMBDA_ENTRY_FILE)).href)}); console.log(JSON.stringify(await m.handler()));`,
        ],
        { env: { PATH: process.env.PATH ?? "", AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "512" } },
      );
      expect(JSON.parse(run.stdout)).toEqual({
        threaded: true,
        // A quarter of the function's 512 MB: a hostile schema ends the thread, not the function.
        maxHeapMb: 128,
        lookahead: expect.stringMatching(/^pattern "\^\(\?=a\)" is not supported: a lookahead/),
        check: { ok: true, value: { n: 1 } },
        threadsStarted: 1,
      });
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});
