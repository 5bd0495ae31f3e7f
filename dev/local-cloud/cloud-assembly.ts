/**
 * Synthesizing a CDK app into a cloud assembly for the local cloud: the app command runs as
 * `cdk synth` runs it (a child process with `CDK_OUTDIR` and `CDK_CONTEXT_JSON`), so the local
 * cloud brings up exactly the template and the bundled assets a deploy would upload.
 *
 * Synthesis bundles every function with esbuild (seconds each), so `cachedAssembly` keeps one
 * assembly per input: a hash of the app command, its context and the files it is built from
 * (the harness's `src/`, the app, the agents module's directory). The aws tests and the bench
 * share one per agents module instead of synthesizing per file.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The repository's example app: the basic agents, or any agents module (`harness:agentsEntry`). */
export const EXAMPLE_APP = join(REPO_ROOT, "examples/basic/cdk-app.ts");

export interface SynthOptions {
  /** The app command (as `cdk.json`'s `app`), run with the shell in `cwd`. */
  app: string;
  /** Context values (`-c key=value`). */
  context?: Record<string, string>;
  /** Where the assembly is written. */
  outdir: string;
  /** Default the current directory. */
  cwd?: string;
}

/** Runs the app command into `outdir`; throws with its output when it fails. */
export function synthesize(options: SynthOptions): string {
  const outdir = resolve(options.outdir);
  mkdirSync(outdir, { recursive: true });
  const result = spawnSync(options.app, {
    shell: true,
    cwd: options.cwd ?? process.cwd(),
    encoding: "utf8",
    env: {
      ...process.env,
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify({ "aws:cdk:enable-asset-metadata": true, ...options.context }),
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(`synth failed (${options.app}, exit ${result.status ?? result.signal}):\n${`${result.stdout}\n${result.stderr}`.trim().slice(-4000)}`);
  }
  if (!existsSync(join(outdir, "manifest.json"))) throw new Error(`synth wrote no cloud assembly to ${outdir} (does the app call app.synth() or end normally?)`);
  return outdir;
}

/** `node <file>` as the repository's `cdk.json` runs a TypeScript app. */
export const nodeApp = (file: string): string => `"${process.execPath}" --disable-warning=ExperimentalWarning "${file}"`;

function hashTree(hash: ReturnType<typeof createHash>, path: string): void {
  if (!existsSync(path)) return;
  const stat = statSync(path);
  if (stat.isFile()) {
    hash.update(relative(REPO_ROOT, path)).update(readFileSync(path));
    return;
  }
  for (const entry of readdirSync(path).sort()) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    hashTree(hash, join(path, entry));
  }
}

export interface CachedAssemblyOptions {
  app: string;
  context?: Record<string, string>;
  /** Files and directories whose contents the assembly depends on (beyond `src/`). */
  inputs?: readonly string[];
  /** Default `node_modules/.cache/resolute-harness/assemblies`. */
  cacheDir?: string;
}

/** The assembly of `app` with `context`, synthesized once per content of its inputs. */
export function cachedAssembly(options: CachedAssemblyOptions): { dir: string; cached: boolean; ms: number } {
  const started = performance.now();
  const hash = createHash("sha256").update(options.app).update(JSON.stringify(options.context ?? {}));
  for (const input of [join(REPO_ROOT, "src"), join(REPO_ROOT, "package-lock.json"), ...(options.inputs ?? [])]) hashTree(hash, input);
  const root = options.cacheDir ?? join(REPO_ROOT, "node_modules/.cache/resolute-harness/assemblies");
  const dir = join(root, hash.digest("hex").slice(0, 24));
  if (existsSync(join(dir, "manifest.json"))) return { dir, cached: true, ms: performance.now() - started };
  // Written aside and renamed into place: two test workers may synthesize the same one at once.
  const partial = `${dir}.partial-${process.pid}-${Date.now()}`;
  try {
    synthesize({ app: options.app, context: options.context, outdir: partial, cwd: REPO_ROOT });
    mkdirSync(dirname(dir), { recursive: true });
    try {
      renameSync(partial, dir);
    } catch (err) {
      if (!existsSync(join(dir, "manifest.json"))) throw err;
    }
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return { dir, cached: false, ms: performance.now() - started };
}

/**
 * The example app synthesized over `agentsModule` (the aws tests' and the bench's stacks):
 * context `harness:agentsEntry`, plus any further `context`.
 */
export function exampleAssembly(agentsModule: string, context: Record<string, string> = {}): { dir: string; cached: boolean; ms: number } {
  return cachedAssembly({
    app: nodeApp(EXAMPLE_APP),
    context: { "harness:agentsEntry": resolve(agentsModule), "harness:stackName": "LocalCloud", ...context },
    inputs: [EXAMPLE_APP, dirname(dirname(resolve(agentsModule)))],
  });
}
