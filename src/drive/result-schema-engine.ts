/**
 * Compiles result schemas and checks replies against them (spec §1.12), with the bounds an
 * untrusted schema needs: the limits of `protocol/result-schema-limits.ts`, linear-time patterns
 * and formats, a budget of steps per check (`check-budget.ts`), a cap on the text checked, and a
 * memory bound: ajv keeps everything it ever compiled for its instance's life (validators,
 * schemas, patterns: `removeSchema` frees none of it), so the engine compiles into one ajv
 * instance until the schema bytes compiled into it pass the cache budget, then starts a fresh
 * one and lets the old one go with its cache. It is synchronous and runs wherever it is put: in
 * the result-schema thread (`result-schema-worker.ts`) or inline (docs/adr/0026).
 */
import AjvModule, { type Format } from "ajv";
import { BUDGET_PROPERTY, CheckBudget, CheckTooCostly, meteredValidatorCode } from "./check-budget.ts";
import { ajvLinearRegExp } from "./linear-regexp.ts";
import { resultFormats } from "./result-formats.ts";
import { MAX_RESULT_TEXT_CHARS, resultSchemaLimitError } from "../protocol/result-schema-limits.ts";

// ajv is CommonJS with a `default` export property.
const Ajv = AjvModule.default;
type AjvInstance = InstanceType<typeof Ajv>;
type Validator = ReturnType<AjvInstance["compile"]>;

/** The verdict on a reply against a requested result schema. */
export type ResultCheck = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Schema JSON bytes compiled into one ajv instance before a fresh one replaces it (and its cache).
 * What a schema costs in memory once compiled is many times its JSON: ~200× for one made of
 * `pattern`s (each a compiled RE2 program), so 256 KiB keeps an instance near 50 MiB at worst.
 */
export const VALIDATOR_CACHE_BYTES = 256 * 1024;

/** Longest validation message kept (it becomes a corrective turn and the settled error). */
export const MAX_REASON_CHARS = 2_000;

/** Values every new schema is tried on at its compile: a schema too costly for these is refused up front. */
const PROBES: readonly unknown[] = [null, 0, "", [], {}];

// One optional run of blanks before and after the tag: two adjacent `[ \t]*` would backtrack
// quadratically over a fence followed by many blanks.
const FENCE_OPEN = /```(?:[ \t]*json)?[ \t]*\r?\n/gi;

interface Entry {
  /** The compiled validator, or why there is none (a compile error, or too costly to check). */
  validate: Validator | Error;
  bytes: number;
}

/** One ajv instance, its cache of compiled validators, and the schema bytes compiled into it. */
interface Generation {
  ajv: AjvInstance;
  cache: Map<string, Entry>;
  compiledBytes: number;
}

/** Compiles result schemas and checks replies, within the bounds above. */
export class ResultSchemaEngine {
  readonly #cacheBytes: number;
  readonly #budget: CheckBudget;
  readonly #formats: Record<string, Format>;
  #generation: Generation;
  #generations = 1;

  /**
   * `cacheBytes`: schema bytes compiled into one ajv instance, default {@link VALIDATOR_CACHE_BYTES};
   * `checkSteps`: the budget of one check, default `MAX_RESULT_CHECK_STEPS`.
   */
  constructor(options: { cacheBytes?: number; checkSteps?: number } = {}) {
    this.#cacheBytes = options.cacheBytes ?? VALIDATOR_CACHE_BYTES;
    this.#budget = new CheckBudget(options.checkSteps);
    this.#formats = resultFormats();
    this.#generation = this.#fresh();
  }

  /** Schema JSON bytes compiled into the current ajv instance (at most the budget plus one schema). */
  get cachedBytes(): number {
    return this.#generation.compiledBytes;
  }

  /** Validators cached. */
  get cachedCount(): number {
    return this.#generation.cache.size;
  }

  /** ajv instances used so far (a new one each time the bytes compiled pass the budget). */
  get generations(): number {
    return this.#generations;
  }

  /** Why `schema` cannot be a result schema (a limit, the compiler's message, too costly), or undefined. */
  problem(schema: unknown): string | undefined {
    const validate = this.#validator(schema);
    return validate instanceof Error ? validate.message : undefined;
  }

  /**
   * Checks the last assistant text against `schema`. Candidates are the whole trimmed text, then
   * the first fenced code block (optional `json` tag); the first candidate that parses as JSON is
   * validated. Reasons are the reference texts: "the reply is not a JSON document", "the reply
   * is not valid JSON: …", "the result schema itself is invalid: …", or the validator's message;
   * a reply over {@link MAX_RESULT_TEXT_CHARS} is not checked; a check past its budget of steps
   * fails naming the budget.
   */
  check(text: string, schema: unknown): ResultCheck {
    const validate = this.#validator(schema);
    if (validate instanceof Error) return { ok: false, reason: `the result schema itself is invalid: ${validate.message}` };
    if (text.length > MAX_RESULT_TEXT_CHARS) {
      return { ok: false, reason: `the reply is longer than ${MAX_RESULT_TEXT_CHARS} characters: reply with the JSON document only` };
    }
    const candidates = [text.trim()];
    const fenced = fencedBlock(text);
    if (fenced !== undefined) candidates.push(fenced.trim());
    let parseError: string | undefined;
    for (const candidate of candidates) {
      if (candidate === "") continue;
      let value: unknown;
      try {
        value = JSON.parse(candidate);
      } catch (err) {
        // Only a candidate that looks like JSON earns a parse diagnostic; prose is "not a document".
        if (parseError === undefined && /^[[{]/.test(candidate)) parseError = (err as Error).message;
        continue;
      }
      this.#budget.reset();
      try {
        if (validate(value)) return { ok: true, value };
      } catch (err) {
        if (!(err instanceof CheckTooCostly)) throw err;
        return { ok: false, reason: err.message };
      }
      return { ok: false, reason: capped(this.#generation.ajv.errorsText(validate.errors, { dataVar: "result" })) };
    }
    if (parseError !== undefined) return { ok: false, reason: `the reply is not valid JSON: ${capped(parseError)}` };
    return { ok: false, reason: "the reply is not a JSON document" };
  }

  #validator(schema: unknown): Validator | Error {
    if (schema === null || (typeof schema !== "object" && typeof schema !== "boolean")) {
      return new Error("a JSON Schema must be an object or a boolean");
    }
    // Limits first: a schema nested 100,000 deep must not reach JSON.stringify.
    const limit = resultSchemaLimitError(schema);
    if (limit !== undefined) return new Error(limit);
    const key = JSON.stringify(schema);
    const cache = this.#generation.cache;
    const cached = cache.get(key);
    if (cached !== undefined) {
      // Most recently used last.
      cache.delete(key);
      cache.set(key, cached);
      return cached.validate;
    }
    const bytes = Buffer.byteLength(key, "utf8");
    if (this.#generation.compiledBytes + bytes > this.#cacheBytes && this.#generation.compiledBytes > 0) {
      // Everything compiled so far lives in the old instance: drop it whole (its validators too).
      this.#generation = this.#fresh();
      this.#generations++;
    }
    const generation = this.#generation;
    generation.compiledBytes += bytes;
    const entry: Entry = { validate: this.#compile(generation.ajv, schema as object), bytes };
    generation.cache.set(key, entry);
    return entry.validate;
  }

  #fresh(): Generation {
    const ajv = new Ajv({
      allErrors: true,
      strict: false,
      logger: false,
      // A referenced schema is compiled once, as a function, not copied into every place that
      // refers to it: 200 `$ref`s to a 200-property definition (9 KB) took 42 s and 422 MiB inlined.
      inlineRefs: false,
      formats: this.#formats,
      code: { regExp: ajvLinearRegExp(this.#budget), process: meteredValidatorCode },
    });
    Object.defineProperty(ajv, BUDGET_PROPERTY, { value: this.#budget });
    return { ajv, cache: new Map(), compiledBytes: 0 };
  }

  #compile(ajv: AjvInstance, schema: object): Validator | Error {
    // ajv registers every `$id` it meets, nested ones included, and keeps a failed schema in its
    // own cache: forget all of it, so nothing a caller sent outlives this compile.
    const refsBefore = new Set(Object.keys(ajv.refs));
    try {
      this.#budget.reset();
      const validate = ajv.compile(schema);
      // A schema whose check of a trivial value runs out of steps is refused before it is stored.
      this.#budget.reset();
      for (const probe of PROBES) validate(probe);
      return validate;
    } catch (err) {
      return err instanceof Error ? new Error(capped(err.message)) : new Error(capped(String(err)));
    } finally {
      ajv.removeSchema(schema);
      for (const ref of Object.keys(ajv.refs)) if (!refsBefore.has(ref)) delete ajv.refs[ref];
    }
  }
}

/** The body of the first fenced code block, found without backtracking over the text. */
function fencedBlock(text: string): string | undefined {
  FENCE_OPEN.lastIndex = 0;
  const open = FENCE_OPEN.exec(text);
  if (open === null) return undefined;
  const start = open.index + open[0].length;
  const end = text.indexOf("```", start);
  return end < 0 ? undefined : text.slice(start, end);
}

function capped(reason: string): string {
  return reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}… (${reason.length - MAX_REASON_CHARS} more characters)` : reason;
}
