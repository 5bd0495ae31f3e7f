/**
 * The result-schema engine on untrusted schemas and replies (issue 24): patterns and formats
 * match in linear time (re2js; `url` on the URL parser), patterns that need backtracking are
 * refused, the reply checked and the messages are capped, and the cache of compiled validators
 * is bounded by bytes with every `$id` forgotten after its compile.
 */
import { describe, expect, it } from "vitest";
import { ResultSchemaEngine } from "../../../src/drive/result-schema-engine.ts";
import { resultFormats } from "../../../src/drive/result-formats.ts";
import { MAX_RESULT_TEXT_CHARS } from "../../../src/protocol/result-schema-limits.ts";
import { MAX_RESULT_CHECK_STEPS, MAX_RESULT_PATTERN_INSTRUCTIONS } from "../../../src/protocol/limits.ts";

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
    expect(engine.problem({ type: "string", pattern: "^(?=a)a" })).toMatch(/pattern "\^\(\?=a\)a" is not supported: a lookahead/);
    expect(engine.problem({ patternProperties: { "(a)\\1": { type: "string" } } })).toMatch(/pattern "\(a\)\\\\1" is not supported/);
  });

  it("counted repetitions that multiply a pattern's size are refused naming the limit (RE2's 1,000, the program's 1,000 instructions)", () => {
    const refusal = (pattern: string) => engine.problem({ type: "string", pattern });
    expect(refusal("(a{1000}){1000}")).toMatch(/is not supported: nested repetitions whose counts multiply past 1000 \(RE2's limit\)/);
    expect(refusal("((a{100}){100}){100}")).toMatch(/multiply past 1000 \(RE2's limit\)/);
    expect(refusal("a{1001}")).toMatch(/a repetition count over 1000 \(RE2's limit\)/);
    expect(refusal("[\\s\\S]{1000}")).toMatch(new RegExp(`compiles to \\d+ instructions, more than ${MAX_RESULT_PATTERN_INSTRUCTIONS}`));
    expect(refusal("a{5,2}")).toMatch(/the repetition \{5,2\} counts down/);
    // What users write is well inside: a bounded label, a phone number, a host name.
    for (const pattern of ["^[a-z]{0,255}$", "^(\\d{3}-){2}\\d{4}$", "^[a-z0-9-]{1,63}(\\.[a-z0-9-]{1,63})*$"]) expect(refusal(pattern), pattern).toBeUndefined();
    // RE2 counts a repetition inside another as their product: 63 × 20 is past its 1,000.
    expect(refusal("^(?:[a-z0-9]{1,63}\\.){1,20}[a-z]{2,63}$")).toMatch(/multiply past 1000 \(RE2's limit\), at `\{1,20\}`/);
    // The cap holds for patternProperties' keys too.
    expect(engine.problem({ patternProperties: { "x{999}y{999}": { type: "string" } } })).toMatch(/more than 1000/);
  });

  it("a schema whose check takes exponential work ($refs doubling per level, 2 KB) is refused at admission naming the budget", () => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < 31; i++) defs[`a${i}`] = { allOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
    defs.a31 = { type: "integer" };
    expect(engine.problem({ $defs: defs, $ref: "#/$defs/a0" })).toBe(
      `checking a value against the result schema takes more than ${MAX_RESULT_CHECK_STEPS} steps (calls of $ref and nested validators)`,
    );
    // 200 $refs to one 200-property definition compile once, as a function (inlined: 42 s, 422 MiB).
    const properties = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`p${i}`, { type: "string" }]));
    const shared = { $defs: { L: { type: "object", properties } }, allOf: Array.from({ length: 200 }, () => ({ $ref: "#/$defs/L" })) };
    expect(engine.problem(shared)).toBeUndefined();
    expect(engine.check('{"p1":"x"}', shared)).toEqual({ ok: true, value: { p1: "x" } });
  });

  it("a pattern on a long reply is charged to the check's budget: the check stops naming it", () => {
    const schema = { type: "array", items: { type: "string", pattern: "a[ab]{990}c" } };
    // 60 strings of 1,000 characters: 60,000 characters × ~1,000 instructions, three times the budget.
    const verdict = engine.check(JSON.stringify(Array.from({ length: 60 }, () => "ab".repeat(500))), schema);
    expect(verdict).toEqual({ ok: false, reason: `checking a value against the result schema takes more than ${MAX_RESULT_CHECK_STEPS} steps (matching patterns)` });
    expect(engine.check(JSON.stringify(["a" + "b".repeat(990) + "c"]), schema).ok).toBe(true);
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

