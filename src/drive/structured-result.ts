/**
 * Structured results (spec §1.12): the check of a caller's result schema at admission, the check
 * of the last reply against it, and the texts of the corrective loop. Compiling and checking run
 * on the result-schema thread where its entry file lies beside this module (unbundled installs,
 * `npm start`); in a bundle without it (the Lambda functions, one request per container) they run
 * inline, bounded by the same limits (docs/adr/0026).
 */
import { existsSync } from "node:fs";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { ResultSchemaEngine, type ResultCheck } from "./result-schema-engine.ts";
import { resultSchemaLimitError } from "./result-schema-limits.ts";
import { ResultSchemaThread } from "./result-schema-thread.ts";

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

/** The engine on the calling thread (bundles without the worker entry, tests). */
export function inlineChecker(engine = new ResultSchemaEngine()): ResultSchemaChecker {
  return {
    problem: async (schema) => engine.problem(schema),
    check: async (text, schema) => engine.check(text, schema),
  };
}

/** The worker entry beside this module, in this module's own extension (`.ts` from the sources). */
export const RESULT_SCHEMA_WORKER_URL = new URL(`./result-schema-worker${extname(new URL(import.meta.url).pathname) || ".js"}`, import.meta.url);

let shared: ResultSchemaChecker | undefined;

/** The process's checker: the thread when its entry file exists, else inline. */
export function resultSchemaChecker(): ResultSchemaChecker {
  if (shared) return shared;
  const threaded = RESULT_SCHEMA_WORKER_URL.protocol === "file:" && existsSync(fileURLToPath(RESULT_SCHEMA_WORKER_URL));
  shared = threaded ? new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL) : inlineChecker();
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
