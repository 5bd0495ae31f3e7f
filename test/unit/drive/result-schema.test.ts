/**
 * A caller's result schema is untrusted (issue 24): its size and depth are limited before it
 * compiles, patterns and formats match in linear time, the cache of compiled validators is
 * bounded by bytes, the reply text checked is capped, and on the result-schema thread a compile
 * past its deadline or heap limit ends the thread, not the server.
 */
import { describe, expect, it } from "vitest";
import { ResultSchemaEngine } from "../../../src/drive/result-schema-engine.ts";
import { MAX_RESULT_SCHEMA_BYTES, MAX_RESULT_SCHEMA_DEPTH, MAX_RESULT_TEXT_CHARS, resultSchemaLimitError } from "../../../src/drive/result-schema-limits.ts";
import { ResultSchemaBusy, ResultSchemaThread } from "../../../src/drive/result-schema-thread.ts";
import { checkStructuredResult, RESULT_SCHEMA_WORKER_URL, resultSchemaError } from "../../../src/drive/structured-result.ts";

/** An object schema nested `depth` levels deep (the innermost is a string schema). */
function nested(depth: number): unknown {
  let schema: unknown = { type: "string" };
  for (let i = 1; i < depth; i++) schema = { type: "object", properties: { a: schema } };
  return schema;
}

/** A schema whose compile takes seconds: one `anyOf` of `n` constants (ajv's code generation is quadratic in it). */
function slowToCompile(n: number, salt = ""): unknown {
  return { anyOf: Array.from({ length: n }, (_, i) => ({ const: `${salt}${i}` })) };
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

describe("result schema engine", () => {
  const engine = new ResultSchemaEngine();

  it("`^(a+)+$` on a 40-character reply answers at once (V8's backtracking would run for days)", () => {
    const schema = { type: "object", properties: { name: { type: "string", pattern: "^(a+)+$" } } };
    const reply = JSON.stringify({ name: `${"a".repeat(40)}!` });
    expect(engine.check(reply, schema)).toEqual({ ok: false, reason: expect.stringContaining('must match pattern "^(a+)+$"') });
    expect(engine.check(JSON.stringify({ name: "aaaa" }), schema)).toEqual({ ok: true, value: { name: "aaaa" } });
    // patternProperties match keys on the same engine.
    const keys = { type: "object", patternProperties: { "^(a+)+$": { type: "number" } }, additionalProperties: false };
    expect(engine.check(JSON.stringify({ [`${"a".repeat(40)}!`]: 1 }), keys)).toEqual({ ok: false, reason: expect.stringContaining("additional properties") });
    expect(engine.check(JSON.stringify({ aaa: 1 }), keys).ok).toBe(true);
  });

  it("patterns keep ECMAScript's escapes; lookarounds and backreferences are refused up front, naming the pattern", () => {
    expect(engine.problem({ type: "string", pattern: "^caf\\u00e9 \\d{2}$" })).toBeUndefined();
    expect(engine.check('"café 42"', { type: "string", pattern: "^caf\\u00e9 \\d{2}$" }).ok).toBe(true);
    expect(engine.check('"😀"', { type: "string", pattern: "^\\uD83D\\uDE00$" }).ok).toBe(true);
    expect(engine.problem({ type: "string", pattern: "^(?=a)a" })).toMatch(/pattern "\^\(\?=a\)a" is not supported: .*no lookahead, lookbehind or backreferences/);
    expect(engine.problem({ patternProperties: { "(a)\\1": { type: "string" } } })).toMatch(/pattern "\(a\)\\\\1" is not supported/);
  });

  it("formats match in linear time: `url` on `http://` + 50,000 `::` (0.9 s for 8,000 on V8's expression) and an e-mail pumped the same way", () => {
    expect(engine.check(JSON.stringify(`http://${"::".repeat(50_000)}\n`), { type: "string", format: "url" }).ok).toBe(false);
    expect(engine.check('"https://example.com/a?b=1"', { type: "string", format: "url" }).ok).toBe(true);
    expect(engine.check('"mailto:x@example.com"', { type: "string", format: "url" }).ok).toBe(false);
    expect(engine.check(JSON.stringify(`a@${"a".repeat(50_000)}`), { type: "string", format: "email" }).ok).toBe(false);
    expect(engine.check('"ada@example.com"', { type: "string", format: "email" }).ok).toBe(true);
    expect(engine.check('"2024-02-30"', { type: "string", format: "date" }).ok).toBe(false);
  });

  it("a reply longer than the text cap is not checked; a fence followed by 60,000 blanks is no stall", () => {
    const reply = JSON.stringify("x".repeat(MAX_RESULT_TEXT_CHARS));
    expect(engine.check(reply, { type: "string" })).toEqual({ ok: false, reason: expect.stringContaining(`longer than ${MAX_RESULT_TEXT_CHARS} characters`) });
    expect(engine.check(`\`\`\`${" ".repeat(60_000)}x`, { type: "string" })).toEqual({ ok: false, reason: "the reply is not a JSON document" });
    expect(engine.check('Here:\n```json\n{"a":1}\n```', { type: "object" })).toEqual({ ok: true, value: { a: 1 } });
  });

  it("a validation message is capped", () => {
    const schema = { type: "object", properties: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field${i}`, { type: "string" }])) };
    const reply = JSON.stringify(Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field${i}`, i])));
    const verdict = engine.check(reply, schema);
    expect(verdict.ok).toBe(false);
    expect((verdict as { reason: string }).reason.length).toBeLessThan(2_100);
    expect((verdict as { reason: string }).reason).toMatch(/more characters\)$/);
  });

  it("the cache of compiled validators is bounded by bytes; an $id a schema brings is forgotten after its compile", () => {
    const small = new ResultSchemaEngine({ cacheBytes: 4_096 });
    for (let i = 0; i < 50; i++) small.problem({ type: "object", description: `schema ${i} ${"x".repeat(400)}` });
    expect(small.cachedBytes).toBeLessThanOrEqual(4_096);
    expect(small.cachedCount).toBeLessThan(50);
    expect(small.cachedCount).toBeGreaterThan(0);
    // A nested $id does not stay registered for the next caller's schema to reach.
    expect(small.problem({ type: "object", properties: { a: { $id: "inner", type: "string" } } })).toBeUndefined();
    expect(small.problem({ type: "object", properties: { a: { $ref: "inner" } } })).toMatch(/can't resolve reference inner/);
  });
});

describe("result-schema thread", () => {
  it("a compile past its deadline ends the thread and is answered with the limit; the next job runs on a fresh thread", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { jobTimeoutMs: 1_500 });
    try {
      expect(await thread.problem(slowToCompile(1_500))).toBe("compiling the result schema took longer than 1500 ms");
      expect(await thread.problem({ type: "object" })).toBeUndefined();
      expect(await thread.check('{"a":1}', { type: "object" })).toEqual({ ok: true, value: { a: 1 } });
    } finally {
      await thread.close();
    }
  });

  it("the event loop keeps turning while the thread compiles a schema that takes seconds", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL);
    try {
      await thread.problem({ type: "string" }); // the thread is up
      let ticks = 0;
      let worstGapMs = 0;
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        worstGapMs = Math.max(worstGapMs, now - last);
        last = now;
        ticks++;
      }, 10);
      const started = performance.now();
      const problem = await thread.problem(slowToCompile(300, "loop"));
      const elapsed = performance.now() - started;
      clearInterval(timer);
      expect(problem).toBeUndefined();
      // Inline, the loop would not turn once during the compile (a second or more): here it kept
      // turning, at least every half second (coarse: the machine is shared).
      expect(ticks).toBeGreaterThanOrEqual(Math.floor(elapsed / 500));
      expect(ticks).toBeGreaterThan(0);
      expect(worstGapMs).toBeLessThan(1_000);
    } finally {
      await thread.close();
    }
  });

  it("admission checks beyond the queue limit are refused as busy (503), checks of admitted runs are not", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { maxQueued: 2 });
    try {
      const running = thread.problem(slowToCompile(300, "busy"));
      const queued = [thread.problem({ type: "string" }), thread.problem({ type: "number" })];
      await expect(thread.problem({ type: "boolean" })).rejects.toBeInstanceOf(ResultSchemaBusy);
      await expect(thread.problem({ type: "boolean" })).rejects.toMatchObject({ code: "schema_checker_busy" });
      const check = thread.check("true", { type: "boolean" });
      expect(await Promise.all([running, ...queued])).toEqual([undefined, undefined, undefined]);
      expect(await check).toEqual({ ok: true, value: true });
    } finally {
      await thread.close();
    }
  });

  it("a compile over the thread's heap limit ends the thread, not the process", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { maxHeapMb: 8, jobTimeoutMs: 20_000 });
    try {
      expect(await thread.problem(slowToCompile(2_000, "heap"))).toMatch(/ran out of memory \(8 MiB\)|thread (failed|exited)/);
      expect(await new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL).problem({ type: "string" })).toBeUndefined();
    } finally {
      await thread.close();
    }
  });
});
