/**
 * Compiles result schemas and checks replies against them (spec §1.12), with the bounds an
 * untrusted schema needs: the limits of `result-schema-limits.ts`, linear-time patterns and
 * formats, a cache of compiled validators bounded by bytes, and a cap on the text checked. It is
 * synchronous and runs wherever it is put: in the result-schema thread (`result-schema-worker.ts`)
 * or inline (docs/adr/0026).
 */
import AjvModule from "ajv";
import { ajvLinearRegExp } from "./linear-regexp.ts";
import { resultFormats } from "./result-formats.ts";
import { MAX_RESULT_TEXT_CHARS, resultSchemaLimitError } from "./result-schema-limits.ts";

// ajv is CommonJS with a `default` export property.
const Ajv = AjvModule.default;
type Validator = ReturnType<InstanceType<typeof Ajv>["compile"]>;

/** The verdict on a reply against a requested result schema. */
export type ResultCheck = { ok: true; value: unknown } | { ok: false; reason: string };

/** Total size (schema JSON bytes) of the compiled validators kept; compiled code takes ~16× that. */
export const VALIDATOR_CACHE_BYTES = 2 * 1024 * 1024;

/** Longest validation message kept (it becomes a corrective turn and the settled error). */
export const MAX_REASON_CHARS = 2_000;

// One optional run of blanks before and after the tag: two adjacent `[ \t]*` would backtrack
// quadratically over a fence followed by many blanks.
const FENCE_OPEN = /```(?:[ \t]*json)?[ \t]*\r?\n/gi;

interface Entry {
  validate: Validator | Error;
  bytes: number;
}

/** One ajv instance and its cache of compiled validators (least recently used first out). */
export class ResultSchemaEngine {
  readonly #ajv = new Ajv({
    allErrors: true,
    strict: false,
    logger: false,
    formats: resultFormats(),
    code: { regExp: ajvLinearRegExp },
  });
  readonly #cache = new Map<string, Entry>();
  readonly #cacheBytes: number;
  #bytes = 0;

  /** `cacheBytes`: the cache's budget, default {@link VALIDATOR_CACHE_BYTES}. */
  constructor(options: { cacheBytes?: number } = {}) {
    this.#cacheBytes = options.cacheBytes ?? VALIDATOR_CACHE_BYTES;
  }

  /** Bytes of schema JSON behind the cached validators (at most the budget). */
  get cachedBytes(): number {
    return this.#bytes;
  }

  /** Validators cached. */
  get cachedCount(): number {
    return this.#cache.size;
  }

  /** Why `schema` cannot be a result schema (a limit, or the compiler's message), or undefined. */
  problem(schema: unknown): string | undefined {
    const validate = this.#validator(schema);
    return validate instanceof Error ? validate.message : undefined;
  }

  /**
   * Checks the last assistant text against `schema`. Candidates are the whole trimmed text, then
   * the first fenced code block (optional `json` tag); the first candidate that parses as JSON is
   * validated. Reasons are the reference texts: "the reply is not a JSON document", "the reply
   * is not valid JSON: …", "the result schema itself is invalid: …", or the validator's message;
   * a reply over {@link MAX_RESULT_TEXT_CHARS} is not checked.
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
      if (validate(value)) return { ok: true, value };
      return { ok: false, reason: capped(this.#ajv.errorsText(validate.errors, { dataVar: "result" })) };
    }
    if (parseError !== undefined) return { ok: false, reason: `the reply is not valid JSON: ${capped(parseError)}` };
    return { ok: false, reason: "the reply is not a JSON document" };
  }

  #validator(schema: unknown): Validator | Error {
    if (schema === null || (typeof schema !== "object" && typeof schema !== "boolean")) {
      return new Error("a JSON Schema must be an object or a boolean");
    }
    const limit = resultSchemaLimitError(schema);
    if (limit !== undefined) return new Error(limit);
    const key = JSON.stringify(schema);
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      // Most recently used last.
      this.#cache.delete(key);
      this.#cache.set(key, cached);
      return cached.validate;
    }
    const entry: Entry = { validate: this.#compile(schema as object), bytes: Buffer.byteLength(key, "utf8") };
    this.#cache.set(key, entry);
    this.#bytes += entry.bytes;
    for (const [oldKey, old] of this.#cache) {
      if (this.#bytes <= this.#cacheBytes) break;
      this.#cache.delete(oldKey);
      this.#bytes -= old.bytes;
    }
    return entry.validate;
  }

  #compile(schema: object): Validator | Error {
    // ajv registers every `$id` it meets, nested ones included, and keeps a failed schema in its
    // own cache: forget all of it, so nothing a caller sent outlives this compile.
    const refsBefore = new Set(Object.keys(this.#ajv.refs));
    try {
      return this.#ajv.compile(schema);
    } catch (err) {
      return err instanceof Error ? new Error(capped(err.message)) : new Error(capped(String(err)));
    } finally {
      this.#ajv.removeSchema(schema);
      for (const ref of Object.keys(this.#ajv.refs)) if (!refsBefore.has(ref)) delete this.#ajv.refs[ref];
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
