/**
 * Structured results (spec §1.12): the check of a caller's result schema at admission, the check
 * of the last reply against it, and the texts of the corrective loop. Compiling and checking run
 * on the result-schema thread, whose entry file lies beside this module (unbundled installs) or
 * beside the bundle's entry (`npm start`'s build/, every Lambda bundle: this module may sit in its
 * `chunks/`). Only a bundle built without that entry checks inline, bounded by the same limits but
 * with no deadline (docs/adr/0026).
 */
import { existsSync } from "node:fs";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import type { ResultSchemaEngine, ResultCheck } from "./result-schema-engine.ts";
import { resultSchemaLimitError } from "../protocol/result-schema-limits.ts";
import { RESULT_SCHEMA_THREAD_LIMITS, ResultSchemaThread, type ResultSchemaThreadLimits } from "./result-schema-thread.ts";

export type { ResultCheck } from "./result-schema-engine.ts";

/** Default corrective turns when a dispatch asks for a structured result without `resultRetries`. */
export const DEFAULT_RESULT_RETRIES = 2;

/** Where result schemas are compiled and replies checked. */
export interface ResultSchemaChecker {
  /** Why `schema` cannot be a result schema (a limit or the compiler's message), or undefined. */
  problem(schema: unknown): Promise<string | undefined>;
  /** Checks `text` against `schema`. */
  check(text: string, schema: unknown): Promise<ResultCheck>;
}

/**
 * The engine on the calling thread (a bundle without the worker entry, tests): no deadline, so
 * only the limits bound it. The engine (ajv) loads on first use.
 */
export function inlineChecker(engine?: ResultSchemaEngine): ResultSchemaChecker {
  let loaded: Promise<ResultSchemaEngine> | undefined = engine && Promise.resolve(engine);
  const get = (): Promise<ResultSchemaEngine> => (loaded ??= import("./result-schema-engine.ts").then((m) => new m.ResultSchemaEngine()));
  return {
    problem: async (schema) => (await get()).problem(schema),
    check: async (text, schema) => (await get()).check(text, schema),
  };
}

const OWN_EXTENSION = extname(new URL(import.meta.url).pathname) || ".js";

/** The worker entry beside this module, in this module's own extension (`.ts` from the sources). */
export const RESULT_SCHEMA_WORKER_URL = new URL(`./result-schema-worker${OWN_EXTENSION}`, import.meta.url);

/**
 * Where the worker entry is, if anywhere: beside this module, or one folder up (a bundle's
 * `chunks/` folder holds this module, the bundle's root the entry: `lambda-bundling.ts`).
 */
export function resultSchemaWorkerUrl(): URL | undefined {
  if (RESULT_SCHEMA_WORKER_URL.protocol !== "file:") return undefined;
  const candidates = [RESULT_SCHEMA_WORKER_URL, new URL(`../result-schema-worker${OWN_EXTENSION}`, import.meta.url)];
  return candidates.find((url) => existsSync(fileURLToPath(url)));
}

/**
 * The thread's limits in this process: the defaults, with the heap ceiling cut to a quarter of a
 * Lambda function's memory (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`) so a hostile schema ends the
 * thread before the function runs out of memory (the http function has 512 MB by default).
 */
export function resultSchemaThreadLimits(env: NodeJS.ProcessEnv = process.env): ResultSchemaThreadLimits {
  const memoryMb = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  if (!Number.isFinite(memoryMb) || memoryMb <= 0) return RESULT_SCHEMA_THREAD_LIMITS;
  return { ...RESULT_SCHEMA_THREAD_LIMITS, maxHeapMb: Math.max(32, Math.min(RESULT_SCHEMA_THREAD_LIMITS.maxHeapMb, Math.floor(memoryMb / 4))) };
}

let shared: ResultSchemaChecker | undefined;

/** The process's checker: the thread when its entry file exists, else inline. */
export function resultSchemaChecker(): ResultSchemaChecker {
  if (shared) return shared;
  const url = resultSchemaWorkerUrl();
  shared = url ? new ResultSchemaThread(url, resultSchemaThreadLimits()) : inlineChecker();
  return shared;
}

/**
 * Why `schema` cannot be a result schema: a limit it breaks (size, depth: checked here, before
 * anything is handed to the thread), the compiler's message, or the thread's deadline or heap
 * limit. Undefined when it compiles. Admission asks before storing a dispatch (spec §1.12: an
 * invalid schema is refused up front).
 * @throws ResultSchemaBusy when too many schemas are waiting to be checked
 */
export async function resultSchemaError(schema: unknown): Promise<string | undefined> {
  return resultSchemaLimitError(schema) ?? (await resultSchemaChecker().problem(schema));
}

/**
 * Checks the last assistant text against `schema` (spec §1.12); see `ResultSchemaEngine.check`
 * for the candidates and reasons.
 */
export async function checkStructuredResult(text: string, schema: unknown): Promise<ResultCheck> {
  const limit = resultSchemaLimitError(schema);
  if (limit !== undefined) return { ok: false, reason: `the result schema itself is invalid: ${limit}` };
  try {
    return await resultSchemaChecker().check(text, schema);
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

/** Largest schema shown indented in a corrective message; a larger one is shown compact. */
const INDENTED_SCHEMA_CHARS = 16 * 1024;

/** The corrective user message fed back after a reply failed validation (exact reference text). */
export function correctiveMessage(reason: string, schema: unknown): string {
  const indented = JSON.stringify(schema, null, 2);
  return (
    "Your previous reply did not validate against the required JSON schema.\n" +
    `Validation error: ${reason}\n` +
    "Required schema:\n" +
    `${indented.length > INDENTED_SCHEMA_CHARS ? JSON.stringify(schema) : indented}\n` +
    "Reply with ONLY a JSON document that validates against the schema — no prose, no code fences."
  );
}

/** The settled error text when the corrective turns are spent. */
export function resultInvalidError(reason: string): string {
  return `structured result did not validate against the requested schema: ${reason}`;
}
