/**
 * The Lambda bundles as the `Harness` construct builds them (infra/harness-function.ts): esbuild,
 * platform node, target node22, ESM, minified, external source map without sources, the
 * createRequire banner, `#harness-agents` aliased to the basic example's agents. Their sizes,
 * what is in them, and the cold module-load time of each in a fresh Node 22 process.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";
import { AGENTS_ALIAS, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../infra/env.ts";
import { median } from "./stats.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const BANNER = "import{createRequire as __harnessRequire}from'node:module';const require=__harnessRequire(import.meta.url);";

export interface LambdaBundle {
  /** The temporary directory holding every bundle of one `bundleLambdas` call. */
  dir: string;
  role: HarnessFunctionRole;
  file: string;
  bytes: number;
  mapBytes: number;
  metafile: Metafile;
}

/** Bundles every handler into a fresh temporary directory. */
export async function bundleLambdas(agentsEntry = resolve(ROOT, "examples/basic/agents.ts")): Promise<LambdaBundle[]> {
  const outRoot = mkdtempSync(join(tmpdir(), "harness-bench-bundles-"));
  const bundles: LambdaBundle[] = [];
  for (const role of HARNESS_FUNCTION_ROLES) {
    const file = join(outRoot, role, "index.mjs");
    const result = await build({
      entryPoints: [resolve(ROOT, `lambdas/${role}.ts`)],
      outfile: file,
      bundle: true,
      platform: "node",
      target: "node22",
      format: "esm",
      minify: true,
      sourcemap: true,
      sourcesContent: false,
      mainFields: ["module", "main"],
      banner: { js: BANNER },
      alias: { [AGENTS_ALIAS]: agentsEntry },
      metafile: true,
      logLevel: "error",
    });
    bundles.push({ dir: outRoot, role, file, bytes: statSync(file).size, mapBytes: statSync(`${file}.map`).size, metafile: result.metafile });
  }
  return bundles;
}

/** The largest inputs of a bundle, grouped by npm package or project directory. */
export function topInputs(bundle: LambdaBundle, count = 8): { name: string; bytes: number }[] {
  const output = Object.values(bundle.metafile.outputs).find((o) => o.entryPoint !== undefined);
  const sizes = new Map<string, number>();
  for (const [path, input] of Object.entries(output?.inputs ?? {})) {
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
 * sets; the median of `runs` processes. `sourceMaps` adds `--enable-source-maps` (the construct's
 * NODE_OPTIONS).
 */
export function coldLoadMs(bundle: LambdaBundle, runs: number, sourceMaps: boolean): number {
  const loader = join(bundle.file, "..", "load.mjs");
  writeFileSync(
    loader,
    [
      "globalThis.awslambda = { streamifyResponse: (f) => f, HttpResponseStream: { from: (s) => s } };",
      "const t0 = performance.now();",
      "await import('./index.mjs');",
      "process.stdout.write(String(performance.now() - t0));",
    ].join("\n"),
  );
  const env = {
    PATH: process.env.PATH ?? "",
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "bench",
    AWS_SECRET_ACCESS_KEY: "bench",
    TABLE_NAME: "bench-table",
    BUCKET_NAME: "bench-bucket",
    QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/bench.fifo",
    HARNESS_URL_AUTH: "AWS_IAM",
    POWERTOOLS_SERVICE_NAME: "resolute-harness",
    POWERTOOLS_METRICS_NAMESPACE: "resolute-harness",
  };
  const node = resolve(ROOT, "node_modules/.bin/node");
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const run = spawnSync(node, [...(sourceMaps ? ["--enable-source-maps"] : []), loader], { env, encoding: "utf8" });
    if (run.status !== 0) throw new Error(`loading the ${bundle.role} bundle failed: ${run.stderr}`);
    times.push(Number(run.stdout));
  }
  return median(times);
}

/** Removes the bundles' temporary directories. */
export function removeBundles(bundles: LambdaBundle[]): void {
  for (const dir of new Set(bundles.map((b) => b.dir))) rmSync(dir, { recursive: true, force: true });
}
