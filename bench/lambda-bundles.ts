/**
 * The Lambda bundles exactly as the `Harness` construct builds them (the options of
 * src/cdk/lambda-bundling.ts: esbuild, node22, ESM, minified, code splitting, source maps without
 * sources and the module that maps stacks through them, the createRequire banner, `#harness-agents` aliased to the basic example's agents).
 * Their sizes, what is in them, and the cold module-load time of each in a fresh Node 22 process.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";
import { discoverAgentNames } from "../src/cdk/agent-names.ts";
import { AGENT_NAMES_SEPARATOR, HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole, NAMES_ONLY_ROLES } from "../src/lambda/env.ts";
import { entryFileOf, LAMBDA_ENTRY_FILE, lambdaBuildOptions, SHARED_ASSET_ROLES, staticClosure } from "../src/cdk/lambda-bundling.ts";
import { median } from "./stats.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

export interface LambdaBundle {
  /** The temporary directory holding every bundle of one `bundleLambdas` call. */
  dir: string;
  role: HarnessFunctionRole;
  /** The entry file Lambda loads (`index.mjs`, or `worker.mjs` / `dlq.mjs` in their shared asset). */
  file: string;
  /** Size of the entry chunk. */
  bytes: number;
  /** The entry chunk and every chunk it imports statically: what a cold start parses. */
  loadBytes: number;
  /** Every chunk, lazily loaded ones included (the asset's code). */
  totalBytes: number;
  chunks: number;
  /** Source maps beside the chunks, all together. */
  mapBytes: number;
  metafile: Metafile;
  /** Output paths (absolute) of the entry and its static imports. */
  loaded: string[];
  /** Environment the construct gives this function beyond the common one (agent names). */
  env: Record<string, string>;
  /** The asset (directory) it runs from: worker and dlq share one. */
  asset: string;
}

/**
 * Bundles every handler into a fresh temporary directory, as the construct does: one asset each
 * for http and sweeper, one shared by worker and dlq (two entry files, common chunks).
 */
export async function bundleLambdas(agentsEntry = resolve(ROOT, "examples/basic/agents.ts")): Promise<LambdaBundle[]> {
  const outRoot = mkdtempSync(join(tmpdir(), "harness-bench-bundles-"));
  const names = discoverAgentNames(agentsEntry).join(AGENT_NAMES_SEPARATOR);
  const bundles: LambdaBundle[] = [];
  const assets: { dir: string; roles: HarnessFunctionRole[] }[] = [
    { dir: "http", roles: ["http"] },
    { dir: "agents", roles: [...SHARED_ASSET_ROLES] },
    { dir: "sweeper", roles: ["sweeper"] },
  ];
  for (const asset of assets) {
    const outdir = join(outRoot, asset.dir);
    const entry =
      asset.roles.length === 1
        ? resolve(ROOT, `src/lambda/${asset.roles[0]}.ts`)
        : Object.fromEntries(asset.roles.map((role) => [role, resolve(ROOT, `src/lambda/${role}.ts`)]));
    const result = await build(lambdaBuildOptions({ entry, agentsEntry, outdir, sourceMap: true }));
    const outputs = result.metafile.outputs;
    const abs = (path: string) => resolve(process.cwd(), path);
    const size = (paths: string[]) => paths.reduce((sum, p) => sum + outputs[p]!.bytes, 0);
    const code = Object.keys(outputs).filter((p) => !p.endsWith(".map"));
    for (const role of asset.roles) {
      const file = join(outdir, asset.roles.length === 1 ? LAMBDA_ENTRY_FILE : entryFileOf(role));
      const key = Object.keys(outputs).find((p) => abs(p) === file)!;
      const loaded = staticClosure(result.metafile, key);
      bundles.push({
        dir: outRoot,
        role,
        file,
        bytes: outputs[key]!.bytes,
        loadBytes: size(loaded),
        totalBytes: size(code),
        chunks: code.length,
        mapBytes: size(Object.keys(outputs).filter((p) => p.endsWith(".map"))),
        metafile: result.metafile,
        loaded: loaded.map(abs),
        env: NAMES_ONLY_ROLES.includes(role) ? { [HARNESS_ENV.agentNames]: names } : {},
        asset: asset.dir,
      });
    }
  }
  return bundles.sort((a, b) => HARNESS_FUNCTION_ROLES.indexOf(a.role) - HARNESS_FUNCTION_ROLES.indexOf(b.role));
}

/**
 * The largest inputs of what a cold start loads (the entry chunk and its static imports),
 * grouped by npm package or project directory.
 */
export function topInputs(bundle: LambdaBundle, count = 8): { name: string; bytes: number }[] {
  const loaded = new Set(bundle.loaded);
  const outputs = Object.entries(bundle.metafile.outputs).filter(([p]) => loaded.has(resolve(process.cwd(), p)));
  const sizes = new Map<string, number>();
  for (const [path, input] of outputs.flatMap(([, o]) => Object.entries(o.inputs))) {
    const nm = path.lastIndexOf("node_modules/");
    let name: string;
    if (nm >= 0) {
      const parts = path.slice(nm + 13).split("/");
      name = parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
    } else {
      name = path.split("/").slice(0, 2).join("/");
    }
    sizes.set(name, (sizes.get(name) ?? 0) + input.bytesInOutput);
  }
  return [...sizes.entries()]
    .map(([name, bytes]) => ({ name, bytes }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, count);
}

/**
 * Milliseconds to import the bundle (its top level included: settings, clients, the app) in a
 * fresh Node 22 process, with a stand-in `awslambda` global and the environment the construct
 * sets; the median of `runs` processes. `enableSourceMaps` adds `--enable-source-maps` (the
 * construct's NODE_OPTIONS before ADR 0037; its bundles now map stacks when they are formatted).
 */
export function coldLoadMs(bundle: LambdaBundle, runs: number, enableSourceMaps: boolean): number {
  const loader = join(bundle.file, "..", `load-${bundle.role}.mjs`);
  writeFileSync(
    loader,
    [
      "globalThis.awslambda = { streamifyResponse: (f) => f, HttpResponseStream: { from: (s) => s } };",
      "const t0 = performance.now();",
      `await import('./${bundle.file.split("/").pop()}');`,
      "process.stdout.write(String(performance.now() - t0));",
    ].join("\n"),
  );
  const env = bundleEnv(bundle);
  const node = resolve(ROOT, "node_modules/.bin/node");
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const run = spawnSync(node, [...(enableSourceMaps ? ["--enable-source-maps"] : []), loader], { env, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`loading the ${bundle.role} bundle failed: ${run.stderr}`);
    times.push(Number(run.stdout));
  }
  return median(times);
}

/**
 * The environment the construct gives `bundle`'s function, with stand-in resource names (a
 * module load makes no request).
 */
export function bundleEnv(bundle: LambdaBundle): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "bench",
    AWS_SECRET_ACCESS_KEY: "bench",
    TABLE_NAME: "bench-table",
    BUCKET_NAME: "bench-bucket",
    QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/bench.fifo",
    DEAD_LETTER_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/bench-dlq.fifo",
    HARNESS_URL_AUTH: "AWS_IAM",
    POWERTOOLS_SERVICE_NAME: "resolute-harness",
    POWERTOOLS_METRICS_NAMESPACE: "resolute-harness",
    ...bundle.env,
  };
}

/** Removes the bundles' temporary directories. */
export function removeBundles(bundles: LambdaBundle[]): void {
  for (const dir of new Set(bundles.map((b) => b.dir))) rmSync(dir, { recursive: true, force: true });
}
