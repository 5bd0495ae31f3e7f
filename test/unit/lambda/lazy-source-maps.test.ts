/**
 * The stack mapper of Lambda bundles (`src/lambda/lazy-source-maps.ts`, ADR 0037) outside its
 * files with maps: a stack through files without a map, and Node's own errors, read exactly as
 * Node writes them. (The mapping itself is tested on the deployed http bundle, against
 * `--enable-source-maps`: test/unit/cdk/lambda-bundling.test.ts.)
 */
import { execFile } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const mapper = pathToFileURL(`${repoRoot}src/lambda/lazy-source-maps.ts`).href;

/** Stacks of a plain error, a Node error, a class's method and an async frame, in a fresh process. */
async function stacks(withMapper: boolean): Promise<string[]> {
  const script = [
    withMapper ? `await import(${JSON.stringify(mapper)});` : "await Promise.resolve();",
    "class Thrower { go() { throw new TypeError('plain'); } }",
    "const caught = (f) => { try { f(); } catch (e) { return e; } };",
    "async function later() { await null; throw new Error('async'); }",
    "const async = await later().catch((e) => e);",
    "const errors = [caught(() => new Thrower().go()), caught(() => Buffer.alloc(-1)), async, Object.assign(new Error('with code'), { code: 'E1' })];",
    "console.log(JSON.stringify(errors.map((e) => e.stack)));",
  ].join("\n");
  const run = await promisify(execFile)(`${repoRoot}node_modules/.bin/node`, ["--disable-warning=ExperimentalWarning", "--input-type=module", "-e", script]);
  return JSON.parse(run.stdout) as string[];
}

describe("lazy source maps", () => {
  it("writes a stack through files without maps, and Node's own errors, as Node does", async () => {
    const [mapped, plain] = await Promise.all([stacks(true), stacks(false)]);
    expect(mapped[1]).toMatch(/^RangeError \[ERR_OUT_OF_RANGE\]: /);
    expect(mapped[2]).toMatch(/\n {4}at async /);
    expect(mapped).toEqual(plain);
  }, 60_000);
});
