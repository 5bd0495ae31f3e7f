/**
 * A caller's result schema is untrusted (issue 24): its size and depth are limited before anything
 * serializes or compiles it, naming the limit (a schema nested thousands deep was a 500).
 */
import { describe, expect, it } from "vitest";
import { MAX_RESULT_SCHEMA_BYTES, MAX_RESULT_SCHEMA_DEPTH, resultSchemaLimitError } from "../../../src/protocol/result-schema-limits.ts";
import { checkStructuredResult, resultSchemaError } from "../../../src/drive/structured-result.ts";

/** An object schema nested `depth` levels deep (the innermost is a string schema). */
function nested(depth: number): unknown {
  let schema: unknown = { type: "string" };
  for (let i = 1; i < depth; i++) schema = { type: "object", properties: { a: schema } };
  return schema;
}

describe("result schema limits", () => {
  it("a schema over the size limit is refused naming the limit, before anything compiles it", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; JSON.stringify(properties).length <= MAX_RESULT_SCHEMA_BYTES; i++) properties[`p${i}`] = { type: "string", pattern: "^[a-z]+$", format: "email" };
    const schema = { type: "object", properties };
    expect(resultSchemaLimitError(schema)).toBe(`resultSchema exceeds ${MAX_RESULT_SCHEMA_BYTES} bytes as JSON`);
    expect(await resultSchemaError(schema)).toMatch(/exceeds 65536 bytes/);
    // Bytes are UTF-8 bytes: multi-byte text counts as what it costs.
    expect(resultSchemaLimitError({ description: "é".repeat(MAX_RESULT_SCHEMA_BYTES / 2) })).toMatch(/exceeds/);
    expect(resultSchemaLimitError({ description: "e".repeat(MAX_RESULT_SCHEMA_BYTES / 2) })).toBeUndefined();
  });

  it("a schema nested past the depth limit is refused naming it; 100,000 levels are refused, not a stack overflow", async () => {
    expect(resultSchemaLimitError(nested(MAX_RESULT_SCHEMA_DEPTH / 2))).toBeUndefined();
    expect(resultSchemaLimitError(nested(MAX_RESULT_SCHEMA_DEPTH))).toBe(`resultSchema nests deeper than ${MAX_RESULT_SCHEMA_DEPTH} levels`);
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { not: deep };
    expect(() => JSON.stringify(deep)).toThrow(RangeError); // what answered 500 before
    expect(resultSchemaLimitError(deep)).toMatch(/nests deeper than 32 levels/);
    expect(await resultSchemaError(deep)).toMatch(/nests deeper/);
    expect(await checkStructuredResult("{}", deep)).toEqual({ ok: false, reason: expect.stringMatching(/itself is invalid: resultSchema nests deeper/) });
  });
});

