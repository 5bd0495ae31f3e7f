/**
 * The esbuild settings of every harness Lambda bundle, in one place: the `Harness` construct
 * bundles with them at synth (`HarnessFunction`) and `bench/lambda-bundles.ts` measures with
 * them, so the bench measures exactly what deploys. Imports nothing but types, `node:url` and `env.ts`.
 */
import { fileURLToPath } from "node:url";
import type { BuildOptions, Metafile } from "esbuild";
import { AGENTS_ALIAS } from "../lambda/env.ts";

/**
 * Prepended to every output file: CommonJS dependencies inside an ESM bundle may `require` Node
 * built-ins, and each chunk is its own module scope, so each gets its own `require`.
 */
export const LAMBDA_BANNER =
  "import{createRequire as __harnessRequire}from'node:module';const require=__harnessRequire(import.meta.url);";

/** The file Lambda loads (`index.handler`) from an asset of one function; chunks lie beside it under `chunks/`. */
export const LAMBDA_ENTRY_FILE = "index.mjs";

/**
 * The result-schema thread's entry, a further entry point of every asset (written beside
 * `index.mjs`, or `worker.mjs` and `dlq.mjs`, where `structured-result.ts` looks for it): without it, a caller's schema would
 * compile on the function's only thread with no deadline (docs/adr/0026).
 */
export const RESULT_SCHEMA_WORKER_FILE = "result-schema-worker.mjs";

const OWN_EXTENSION = import.meta.url.endsWith(".ts") ? ".ts" : ".js";

const RESULT_SCHEMA_WORKER_SOURCE = fileURLToPath(new URL(`../drive/result-schema-worker${OWN_EXTENSION}`, import.meta.url));

/**
 * The module a bundle with source maps runs first in every file (esbuild `inject`): it maps stack
 * traces through the maps when they are formatted, so a cold start reads no map (docs/adr/0037).
 */
export const LAZY_SOURCE_MAPS_SOURCE = fileURLToPath(new URL(`../lambda/lazy-source-maps${OWN_EXTENSION}`, import.meta.url));

/**
 * The functions that share one asset, each with its own entry file (`worker.mjs`, `dlq.mjs`):
 * both bundle the agents module, so building them together puts what they share (the harness,
 * the agents, the provider SDKs' lazy chunks) in one set of chunks, uploaded and stored once.
 */
export const SHARED_ASSET_ROLES = ["worker", "dlq"] as const;

/** The entry file of a role's function inside its asset (`index.mjs`, or `<role>.mjs` in the shared one). */
export function entryFileOf(role: string): string {
  return (SHARED_ASSET_ROLES as readonly string[]).includes(role) ? `${role}.mjs` : LAMBDA_ENTRY_FILE;
}

/** What one asset's bundle is built from. */
export interface LambdaBundleInput {
  /**
   * Absolute path of the handler module (`lambda/<role>.ts`), written as `index.mjs`; or several
   * handler modules by entry name, each written as `<name>.mjs`, sharing their chunks.
   */
  entry: string | Readonly<Record<string, string>>;
  /** Absolute path of the module exporting `agents`, bound to `#harness-agents`. */
  agentsEntry: string;
  /** Directory the entry file and its chunks are written to. */
  outdir: string;
  /**
   * Write external source maps (without sources) beside the files, and bundle the module that maps
   * stack traces through them when a stack is formatted (`lambda/lazy-source-maps.ts`; Node's
   * `--enable-source-maps` is not needed and not set).
   */
  sourceMap: boolean;
  /**
   * Modules run at cold start before the handler's (esbuild `inject`): the tracing modules of the
   * construct's `tracing` option.
   */
  inject?: readonly string[];
  /** Further specifiers bound to modules (`#harness-otel-setup` → the app's setup module). */
  alias?: Readonly<Record<string, string>>;
}

/**
 * esbuild options for one function: Node 22, ESM, minified, the AWS SDK bundled too (the function
 * runs the SDK version the tests ran, not whichever one the managed runtime ships this month), and
 * code splitting: a dynamic `import()` (a provider SDK behind `resolveModel`, the SDK's credential
 * providers) becomes a separate chunk, parsed only when first used, instead of being inlined into
 * the file every cold start parses. The result-schema worker is a further entry point: the modules
 * it shares with the handler (ajv, re2js) become chunks both load.
 */
export function lambdaBuildOptions(input: LambdaBundleInput): BuildOptions & { metafile: true } {
  // The stack mapper first: it must be installed before anything else's code can format a stack.
  const inject = [...(input.sourceMap ? [LAZY_SOURCE_MAPS_SOURCE] : []), ...(input.inject ?? [])];
  return {
    entryPoints: {
      ...(typeof input.entry === "string" ? { index: input.entry } : input.entry),
      [RESULT_SCHEMA_WORKER_FILE.replace(/\.mjs$/, "")]: RESULT_SCHEMA_WORKER_SOURCE,
    },
    outdir: input.outdir,
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    splitting: true,
    platform: "node",
    target: "node22",
    format: "esm",
    minify: true,
    sourcemap: input.sourceMap,
    sourcesContent: false,
    mainFields: ["module", "main"],
    // Only the chat page's fallback (no built page beside it) would load esbuild: never in a bundle.
    external: ["esbuild"],
    banner: { js: LAMBDA_BANNER },
    alias: { ...input.alias, [AGENTS_ALIAS]: input.agentsEntry },
    ...(inject.length > 0 ? { inject } : {}),
    metafile: true,
    logLevel: "error",
  };
}

/**
 * The output `entry` and every output it imports statically, transitively: what a cold start
 * loads. Paths as the metafile has them (relative to esbuild's working directory).
 */
export function staticClosure(metafile: Metafile, entry: string): string[] {
  const seen = new Set<string>([entry]);
  const pending = [entry];
  while (pending.length > 0) {
    for (const i of metafile.outputs[pending.pop()!]?.imports ?? []) {
      if (i.kind !== "import-statement" || i.external || seen.has(i.path)) continue;
      seen.add(i.path);
      pending.push(i.path);
    }
  }
  return [...seen];
}
