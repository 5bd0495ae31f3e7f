/**
 * The Lambda bundles' build options (issue 24's review): every bundle carries the result-schema
 * thread's entry beside `index.mjs`, so a caller's schema compiles on that thread, under its
 * deadline and a heap ceiling cut to the function's memory, and never on the function's only
 * thread (it did: the bundles had no worker entry, and compiled inline with no deadline).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { LAMBDA_ENTRY_FILE, lambdaBuildOptions, RESULT_SCHEMA_WORKER_FILE, staticClosure } from "../../../src/cdk/lambda-bundling.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const node = join(repoRoot, "node_modules/.bin/node");
const fixture = (name: string): string => fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));

describe("Lambda bundling", () => {
  it("bundles the result-schema thread's entry: a lazily loaded checker finds it and runs schemas on the thread, under Lambda's Node options", async () => {
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
          // Lambda's Node bootstrap for a 512 MB function: Node refuses these in a worker
          // thread's options (issue 33), so the thread must start without them.
          "--expose-gc",
          "--max-http-header-size",
          "81920",
          "--max-semi-space-size=25",
          "--max-old-space-size=461",
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

  it("maps a stack trace of the deployed http bundle into src/ when it is formatted, reading no map at cold start (ADR 0037)", async () => {
    const outdir = mkdtempSync(join(tmpdir(), "harness-maps-"));
    const plain = mkdtempSync(join(tmpdir(), "harness-nomaps-"));
    try {
      await build(lambdaBuildOptions({ entry: join(repoRoot, "src/lambda/http.ts"), agentsEntry: fixture("agents.ts"), outdir, sourceMap: true }));
      await build(lambdaBuildOptions({ entry: join(repoRoot, "src/lambda/http.ts"), agentsEntry: fixture("agents.ts"), outdir: plain, sourceMap: false }));
      const maps = mapFiles(outdir);
      expect(maps.length).toBeGreaterThan(1);
      expect(mapFiles(plain)).toEqual([]);

      // The cold start runs with every map moved away, and they come back only after the import:
      // a map read at init (as `--enable-source-maps` does) would be missing, and its frames unmapped.
      for (const map of maps) renameSync(map, `${map}.away`);
      const lazy = await httpHandlerStack(outdir, [], maps);
      const eager = await httpHandlerStack(outdir, ["--enable-source-maps"], []);
      const unmapped = await httpHandlerStack(plain, [], []);

      // The handler's own frames point into the sources, where Node's --enable-source-maps points them.
      expect(lazy).toMatch(/\n {4}at .*\(\/.*\/src\/lambda\/http\.ts:\d+:\d+\)/);
      expect(lazy).toMatch(/\n {4}at invocation \(\/.*\/src\/lambda\/wiring\.ts:\d+:\d+\)/);
      expect(lazy).not.toContain(LAMBDA_ENTRY_FILE);
      expect(lazy).toBe(eager);
      // Without sourceMaps: no maps, no mapper; the frames are the bundle's.
      expect(unmapped).toContain(`${LAMBDA_ENTRY_FILE}:`);
      expect(unmapped).not.toContain("src/lambda/");
    } finally {
      rmSync(outdir, { recursive: true, force: true });
      rmSync(plain, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Every `.map` file under `dir`. */
function mapFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".map"))
    .map((f) => join(dir, f));
}

/**
 * The stack of the error an http bundle's handler throws for a `null` event (hono reads the
 * event's request context), in a fresh Node 22 process with `flags`; `restore` are maps moved to
 * `<map>.away` that the process moves back after the import, before the stack is formatted.
 */
async function httpHandlerStack(dir: string, flags: string[], restore: string[]): Promise<string> {
  const script = [
    `import { renameSync } from "node:fs";`,
    `globalThis.awslambda = { streamifyResponse: (f) => f, HttpResponseStream: { from: (s) => s } };`,
    `const { handler } = await import(${JSON.stringify(pathToFileURL(join(dir, LAMBDA_ENTRY_FILE)).href)});`,
    `for (const map of ${JSON.stringify(restore)}) renameSync(map + ".away", map);`,
    `let error;`,
    `try { await handler(null, { write() {}, end() {}, on() {} }, { getRemainingTimeInMillis: () => 1000, awsRequestId: "r" }); } catch (e) { error = e; }`,
    `console.log(JSON.stringify(error.stack));`,
  ].join("\n");
  const run = await promisify(execFile)(node, [...flags, "--input-type=module", "-e", script], {
    env: {
      PATH: process.env.PATH ?? "",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
      TABLE_NAME: "t",
      BUCKET_NAME: "b",
      QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo",
      HARNESS_URL_AUTH: "AWS_IAM",
      HARNESS_AGENT_NAMES: "echo",
    },
  });
  // The error's first line and the handler's frames (the test script's own frame differs per run).
  return (JSON.parse(run.stdout) as string)
    .split("\n")
    .filter((line) => !line.includes("[eval"))
    .join("\n");
}
