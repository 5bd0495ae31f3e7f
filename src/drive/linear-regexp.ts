/**
 * Regular expressions that match in time linear in the input (RE2 semantics, `re2js`), for
 * patterns an untrusted caller supplies: a result schema's `pattern` and `patternProperties`.
 * V8's backtracking engine needs seconds to minutes for `^(a+)+$` on a 30-character reply, and it
 * runs on the event loop (docs/adr/0026). Linear is not free: matching costs the text's length
 * times the program's size, so a caller's pattern is capped in size and each match is charged to
 * the check's budget.
 */
import { RE2JS } from "re2js";
import { MAX_RESULT_PATTERN_INSTRUCTIONS } from "../protocol/limits.ts";
import type { CheckBudget } from "./check-budget.ts";
import { PatternRefusal, re2Syntax } from "./pattern-syntax.ts";

/** What ajv calls on a compiled pattern. */
export interface LinearRegExp {
  test(input: string): boolean;
  toString(): string;
}

/** A pattern the linear-time engine cannot run or cannot parse; the message names the cause. */
export class UnsupportedPattern extends Error {
  readonly code = "unsupported_pattern";
  constructor(pattern: string, reason: string) {
    super(`pattern ${JSON.stringify(pattern.length > 200 ? `${pattern.slice(0, 200)}…` : pattern)} is not supported: ${reason}`);
    this.name = "UnsupportedPattern";
  }
}

/** Options of {@link linearRegExp}. */
export interface LinearRegExpOptions {
  /** Largest compiled program (RE2 instructions) accepted; default unbounded (built-in formats). */
  maxInstructions?: number;
  /** Charged `(text length + 1) × program size` before each match. */
  budget?: CheckBudget;
}

/**
 * Compiles an ECMAScript-style `pattern` (flags `i`, `m`, `s`; `u` is implied: RE2 matches code
 * points) for linear-time matching, unanchored as `RegExp.prototype.test`. The syntax is
 * ECMAScript's `u` mode (`pattern-syntax.ts`); what RE2 has no linear-time form for, or what
 * breaks a limit, throws {@link UnsupportedPattern} naming it.
 */
export function linearRegExp(pattern: string, flags = "", options: LinearRegExpOptions = {}): LinearRegExp {
  let re2Flags = 0;
  if (flags.includes("i")) re2Flags |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes("m")) re2Flags |= RE2JS.MULTILINE;
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(re2Syntax(pattern, flags.includes("s")), re2Flags);
  } catch (err) {
    throw new UnsupportedPattern(pattern, err instanceof PatternRefusal ? err.message : re2Reason(err));
  }
  const size = compiled.programSize();
  const max = options.maxInstructions ?? Infinity;
  if (size > max) {
    throw new UnsupportedPattern(
      pattern,
      `it compiles to ${size} instructions, more than ${max} (a counted repetition {n} repeats its atom n times: use maxLength, or fewer repeats)`,
    );
  }
  const budget = options.budget;
  const source = `/${pattern}/${flags}`;
  return {
    test: (input) => {
      budget?.charge((input.length + 1) * size, "matching patterns");
      return compiled.test(input);
    },
    toString: () => source,
  };
}

/** ajv's `code.regExp` option for a caller's patterns: capped in size, charged to `budget`. */
export function ajvLinearRegExp(budget: CheckBudget): ((pattern: string, u: string) => LinearRegExp) & { code: string } {
  return Object.assign((pattern: string, u: string) => linearRegExp(pattern, u, { maxInstructions: MAX_RESULT_PATTERN_INSTRUCTIONS, budget }), {
    code: "linearRegExp",
  });
}

/** RE2's parse error in a user's words. */
function re2Reason(err: unknown): string {
  const message = err instanceof Error ? err.message.replace(/^error parsing regexp: /, "") : String(err);
  const repeat = /^invalid repeat count: `\{(\d+)(?:,(\d*))?\}`/.exec(message);
  if (repeat === null) return message;
  const min = Number(repeat[1]);
  const max = repeat[2] === undefined ? min : repeat[2] === "" ? undefined : Number(repeat[2]);
  if (max !== undefined && min > max) return `the repetition {${min},${max}} counts down`;
  if (min > 1000 || (max ?? 0) > 1000) return `a repetition count over 1000 (RE2's limit), in ${repeat[0].slice(repeat[0].indexOf("`"))}`;
  return `nested repetitions whose counts multiply past 1000 (RE2's limit), at ${repeat[0].slice(repeat[0].indexOf("`"))}`;
}
