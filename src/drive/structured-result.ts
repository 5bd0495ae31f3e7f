import AjvModule from "ajv";
import formatsModule from "ajv-formats";

// ajv and ajv-formats are CommonJS with a `default` export property.
const Ajv = AjvModule.default;
const addFormats = formatsModule.default;

type Validator = ReturnType<InstanceType<typeof Ajv>["compile"]>;

/** The verdict on a reply against a requested result schema. */
export type ResultCheck = { ok: true; value: unknown } | { ok: false; reason: string };

/** Default corrective turns when a dispatch asks for a structured result without `resultRetries`. */
export const DEFAULT_RESULT_RETRIES = 2;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

// Compiled validators by schema JSON: a schema is compiled once per process, not per drive.
const compiled = new Map<string, Validator | Error>();
const MAX_COMPILED = 256;

function validatorFor(schema: unknown): Validator | Error {
  const key = JSON.stringify(schema);
  let entry = compiled.get(key);
  if (entry === undefined) {
    try {
      if (schema === null || (typeof schema !== "object" && typeof schema !== "boolean")) {
        throw new Error("a JSON Schema must be an object or a boolean");
      }
      entry = ajv.compile(schema as object);
      // Forget it by `$id` too: another schema reusing an `$id` must compile, not collide.
      ajv.removeSchema(schema as object);
    } catch (err) {
      entry = err instanceof Error ? err : new Error(String(err));
    }
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, entry);
  }
  return entry;
}

/**
 * Why `schema` cannot be a result schema (the compiler's message), or undefined when it compiles.
 * Admission asks before storing a dispatch (spec §1.12: an invalid schema is refused up front).
 */
export function resultSchemaError(schema: unknown): string | undefined {
  const validate = validatorFor(schema);
  return validate instanceof Error ? validate.message : undefined;
}

const FENCE = /```[ \t]*(?:json)?[ \t]*\r?\n([\s\S]*?)```/i;

/**
 * Checks the last assistant text against `schema` (spec §1.12). Candidates are the whole trimmed
 * text, then the first fenced code block (optional `json` tag); the first candidate that parses
 * as JSON is validated. Reasons are the reference texts: "the reply is not a JSON document",
 * "the reply is not valid JSON: …", "the result schema itself is invalid: …", or the
 * validator's message.
 */
export function checkStructuredResult(text: string, schema: unknown): ResultCheck {
  const validate = validatorFor(schema);
  if (validate instanceof Error) return { ok: false, reason: `the result schema itself is invalid: ${validate.message}` };
  const candidates = [text.trim()];
  const fenced = FENCE.exec(text);
  if (fenced) candidates.push(fenced[1]!.trim());
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
    return { ok: false, reason: ajv.errorsText(validate.errors, { dataVar: "result" }) };
  }
  if (parseError !== undefined) return { ok: false, reason: `the reply is not valid JSON: ${parseError}` };
  return { ok: false, reason: "the reply is not a JSON document" };
}

/** The corrective user message fed back after a reply failed validation (exact reference text). */
export function correctiveMessage(reason: string, schema: unknown): string {
  return (
    "Your previous reply did not validate against the required JSON schema.\n" +
    `Validation error: ${reason}\n` +
    "Required schema:\n" +
    `${JSON.stringify(schema, null, 2)}\n` +
    "Reply with ONLY a JSON document that validates against the schema — no prose, no code fences."
  );
}

/** The settled error text when the corrective turns are spent. */
export function resultInvalidError(reason: string): string {
  return `structured result did not validate against the requested schema: ${reason}`;
}
