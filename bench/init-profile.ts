/**
 * Where a Lambda bundle's init time goes: the bundle imported in a fresh Node 22 process under
 * `--cpu-prof` (as the local function host starts it: the function's environment, a stand-in
 * `awslambda` global; no `--enable-source-maps`, which the construct does not set: ADR 0037), each
 * sample of the bundle's code mapped back through its source maps to the npm package or project
 * directory its code came from, and each sample of Node's own code charged to what it was doing
 * (compiling the bundle's files, loading Node's built-in modules, the ESM loader's per-file work,
 * source maps).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { component, newProfileDir } from "./cpu-profile.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Milliseconds of init by where the code came from, largest first, and the total profiled. */
export interface InitProfile {
  totalMs: number;
  parts: { name: string; ms: number }[];
}

/**
 * Profiles `runs` imports of `entry` (a bundle's entry file) with `env` and Node's `flags` (e.g.
 * `--enable-source-maps`); the parts are means per run.
 */
export function profileInit(entry: string, env: Record<string, string>, runs = 3, flags: readonly string[] = []): InitProfile {
  const dir = newProfileDir();
  const loader = join(dirname(entry), "profile-load.mjs");
  writeFileSync(
    loader,
    [
      "globalThis.awslambda = { streamifyResponse: (f) => f, HttpResponseStream: { from: (s) => s } };",
      `await import(${JSON.stringify(`./${entry.split("/").pop()}`)});`,
    ].join("\n"),
  );
  const node = fileURLToPath(new URL("../node_modules/.bin/node", import.meta.url));
  try {
    for (let i = 0; i < runs; i++) {
      const run = spawnSync(node, [...flags, "--cpu-prof", "--cpu-prof-interval", "100", `--cpu-prof-dir=${dir}`, loader], {
        env,
        encoding: "utf8",
      });
      if (run.status !== 0) throw new Error(`profiling ${entry} failed: ${run.stderr}`);
    }
    return summarize(dir, runs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(loader, { force: true });
  }
}

function summarize(dir: string, runs: number): InitProfile {
  const maps = new Map<string, SourceMap | undefined>();
  const mapOf = (url: string): SourceMap | undefined => {
    if (!maps.has(url)) {
      let map: SourceMap | undefined;
      try {
        map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, "utf8")));
      } catch {
        map = undefined;
      }
      maps.set(url, map);
    }
    return maps.get(url);
  };
  const parts = new Map<string, number>();
  let total = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    for (let i = 0; i < profile.samples.length; i++) {
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      const node = byId.get(profile.samples[i]!)!;
      const { functionName, url, lineNumber, columnNumber } = node.callFrame;
      if (functionName === "(idle)") continue;
      total += ms;
      let where: string;
      if (functionName === "(garbage collector)") where = "(gc)";
      else if (functionName === "(program)") where = "(program: parse, compile, V8)";
      else if (url.startsWith("file:") && url.endsWith(".mjs")) {
        const source = mapOf(url)?.findEntry(lineNumber, columnNumber);
        const original = source && "originalSource" in source ? source.originalSource : "";
        where = original ? component(original) || original : "(bundle, unmapped)";
      } else where = url.startsWith("node:") || url === "" ? nodeWork(node, byId, parent) : component(url);
      parts.set(where, (parts.get(where) ?? 0) + ms);
    }
  }
  return {
    totalMs: total / runs,
    parts: [...parts.entries()].map(([name, ms]) => ({ name, ms: ms / runs })).sort((a, b) => b.ms - a.ms),
  };
}

/**
 * What a sample of Node's own code (or a native function it called) was doing, from its stack:
 * V8 compiling one of the bundle's files (`compileSourceTextModule`), source maps read at load
 * (`--enable-source-maps`), a built-in module (`node:https`, `node:crypto`, ...) loaded on first
 * import, the ESM loader's other per-file work (resolving, reading, linking), or else.
 */
function nodeWork(sample: ProfileNode, byId: Map<number, ProfileNode>, parent: Map<number, number>): string {
  const names: string[] = [];
  for (let id: number | undefined = sample.id; id !== undefined; id = parent.get(id)) names.push(byId.get(id)!.callFrame.functionName);
  if (names.some((n) => n === "maybeCacheSourceMap" || n === "findSourceMap")) return "(node: source maps at load)";
  if (names[0] === "compileSourceTextModule") return "(node: compiling the bundle's files)";
  if (names.some((n) => n === "compileForInternalLoader" || n === "requireBuiltin" || n === "loadBuiltinModule")) return "(node: built-in modules)";
  if (names.some((n) => /^(#?link|_link|resolve|#?resolve|moduleResolve|getModuleJobForImport|loadAndTranslate|#translate|defaultLoad|readFile|instantiate|_instantiate)$/.test(n))) {
    return "(node: ESM loader, per file)";
  }
  return sample.callFrame.url === "" ? "(native)" : "(node internals, other)";
}
