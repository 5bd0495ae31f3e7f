/**
 * The result-schema engine on untrusted schemas and replies (issue 24): patterns and formats
 * match in linear time (re2js; `url` on the URL parser), patterns that need backtracking are
 * refused, the reply checked and the messages are capped, and the cache of compiled validators
 * is bounded by bytes with every `$id` forgotten after its compile.
 */
import { describe, expect, it } from "vitest";
import { ResultSchemaEngine } from "../../../src/drive/result-schema-engine.ts";
import { resultFormats } from "../../../src/drive/result-formats.ts";
import { MAX_RESULT_TEXT_CHARS } from "../../../src/drive/result-schema-limits.ts";

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

  it("every format answers pumped strings near the text cap (a quadratic one would run for a minute: `url` did)", () => {
    const n = 30_000;
    const attacks = [
      `http://${"::".repeat(n)}\n`,
      `a@${"a".repeat(2 * n)}`,
      `a@${"a.".repeat(n)}`,
      `${"0".repeat(2 * n)}!`,
      `${"1.".repeat(n)}x`,
      `P${"1Y".repeat(n)}!`,
      `2020-01-01T${"0:".repeat(n)}`,
      `/${"~0".repeat(n)} `,
      `${"%2".repeat(n)}!`,
      `a:/${"A".repeat(2 * n)} `,
    ];
    for (const format of Object.keys(resultFormats())) {
      for (const attack of attacks) expect(typeof engine.check(JSON.stringify(attack), { type: "string", format }).ok, format).toBe("boolean");
    }
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

