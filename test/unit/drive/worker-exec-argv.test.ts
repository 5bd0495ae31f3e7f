/**
 * Worker threads start under any Node options the process was started with (issue 33): `npm
 * start`'s `--max-semi-space-size=2`, Lambda's heap flags, per-process options, an `-e` script,
 * each refused by Node in a worker's `execArgv`, answered every dispatch with a `resultSchema`
 * with a 500. The options a worker can take (conditions, loaders, warnings) still reach it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withoutMainScriptOptions, withoutRefused } from "../../../src/drive/worker-exec-argv.ts";

const SRC = join(import.meta.dirname, "..", "..", "..", "src", "drive");

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-worker-argv-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a worker's Node options", () => {
  it("the result-schema thread starts under V8 heap flags, per-process options and -e, and keeps --conditions and --import", () => {
    // Loaded by --import in the process and again in each worker that keeps it: a worker
    // prints the options it was given.
    const preload = join(dir, "preload.mjs");
    writeFileSync(
      preload,
      `import { isMainThread } from "node:worker_threads";\nif (!isMainThread) console.log("worker execArgv " + JSON.stringify(process.execArgv));\n`,
    );
    const script = `
      const { ResultSchemaThread } = await import(${JSON.stringify(pathToFileURL(join(SRC, "result-schema-thread.ts")).href)});
      const thread = new ResultSchemaThread(new URL(${JSON.stringify(pathToFileURL(join(SRC, "result-schema-worker.ts")).href)}));
      try {
        const problem = await thread.problem({ type: "object", required: ["n"] });
        const check = await thread.check('{"n":1}', { type: "object", required: ["n"] });
        console.log("answers " + JSON.stringify({ problem: problem ?? null, check }));
      } catch (err) {
        console.log("failed " + err.code + " " + err.message);
      } finally {
        await thread.close();
      }`;
    const flags = [
      "--max-semi-space-size=2", // npm start's
      "--max-old-space-size=460", // Lambda's bootstrap (and the local function host) sizes the heap so
      "--expose-gc",
      "--stack-trace-limit=40",
      "--v8-pool-size", // per-process, its value a separate argument
      "2",
      "--disable-warning=ExperimentalWarning",
      "--conditions=harness-probe",
      "--import",
      preload,
      "--input-type=module",
      "-e",
      script,
    ];
    const run = spawnSync(process.execPath, flags, { encoding: "utf8", timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines, run.stderr).toContain(`answers ${JSON.stringify({ problem: null, check: { ok: true, value: { n: 1 } } })}`);
    expect(lines).toContain(`worker execArgv ${JSON.stringify(["--disable-warning=ExperimentalWarning", "--conditions=harness-probe", "--import", preload])}`);
  });

  it("the main script's options are dropped with their values", () => {
    expect(withoutMainScriptOptions(["--input-type=module", "-e", "x", "--enable-source-maps"])).toEqual(["--enable-source-maps"]);
    expect(withoutMainScriptOptions(["--input-type", "module", "--print", "1", "-C", "dev", "--eval=2", "-p", "3"])).toEqual(["-C", "dev"]);
  });

  it("the options Node's refusal names are dropped, a separate value with its option; another refusal drops nothing", () => {
    const argv = ["--max-semi-space-size=2", "--title", "my server", "-C", "dev", "--expose-gc", "--import", "./x.mjs"];
    expect(withoutRefused(argv, "Initiated Worker with invalid execArgv flags: --max-semi-space-size=2, --title, --expose-gc")).toEqual([
      "-C",
      "dev",
      "--import",
      "./x.mjs",
    ]);
    expect(withoutRefused(argv, "Initiated Worker with invalid execArgv flags: --unknown")).toBeUndefined();
    expect(withoutRefused(argv, "Initiated Worker with invalid NODE_OPTIONS env variable: --title")).toBeUndefined();
  });
});
