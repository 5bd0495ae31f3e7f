/**
 * The check of a caller's result schema (spec §1.12's `resultSchema`) against its limits
 * (`limits.ts`), before anything compiles it: a schema is code the server generates and
 * runs, so its size and nesting are bounded like a body's (docs/adr/0026).
 */
import { MAX_RESULT_SCHEMA_BYTES, MAX_RESULT_SCHEMA_DEPTH } from "./limits.ts";

export { MAX_RESULT_SCHEMA_BYTES, MAX_RESULT_SCHEMA_DEPTH, MAX_RESULT_TEXT_CHARS } from "./limits.ts";

/**
 * Why `schema` breaks a limit ("resultSchema exceeds …", naming it), or undefined. Walks the
 * value without recursion, so a schema nested 100,000 deep is refused, not a stack overflow;
 * stops at the first limit broken.
 */
export function resultSchemaLimitError(schema: unknown): string | undefined {
  if (schema === null || typeof schema !== "object") return undefined;
  let bytes = 0;
  const stack: [unknown, number][] = [[schema, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== "object") {
      bytes += scalarBytes(value);
    } else {
      if (depth > MAX_RESULT_SCHEMA_DEPTH) return `resultSchema nests deeper than ${MAX_RESULT_SCHEMA_DEPTH} levels`;
      if (Array.isArray(value)) {
        bytes += 2 + Math.max(0, value.length - 1);
        for (const item of value) stack.push([item, depth + 1]);
      } else {
        const entries = Object.entries(value);
        bytes += 2 + Math.max(0, entries.length - 1);
        for (const [key, item] of entries) {
          bytes += Buffer.byteLength(JSON.stringify(key), "utf8") + 1;
          stack.push([item, depth + 1]);
        }
      }
    }
    if (bytes > MAX_RESULT_SCHEMA_BYTES) return `resultSchema exceeds ${MAX_RESULT_SCHEMA_BYTES} bytes as JSON`;
  }
  return undefined;
}

function scalarBytes(value: unknown): number {
  if (typeof value === "string") return Buffer.byteLength(JSON.stringify(value), "utf8");
  if (value === undefined) return 0;
  return String(JSON.stringify(value)).length;
}
