/**
 * Regular expressions that match in time linear in the input (RE2 semantics, `re2js`), for
 * patterns an untrusted caller supplies: a result schema's `pattern` and `patternProperties`.
 * V8's backtracking engine needs seconds to minutes for `^(a+)+$` on a 30-character reply, and it
 * runs on the event loop (docs/adr/0026).
 */
import { RE2JS } from "re2js";

/** What ajv calls on a compiled pattern. */
export interface LinearRegExp {
  test(input: string): boolean;
  toString(): string;
}

/** A pattern the linear-time engine cannot run (a lookaround, a backreference) or cannot parse. */
export class UnsupportedPattern extends Error {
  readonly code = "unsupported_pattern";
  constructor(pattern: string, reason: string) {
    super(
      `pattern ${JSON.stringify(pattern.length > 200 ? `${pattern.slice(0, 200)}…` : pattern)} is not supported: ${reason} ` +
        "(patterns run on a linear-time engine: no lookahead, lookbehind or backreferences)",
    );
    this.name = "UnsupportedPattern";
  }
}

/**
 * Compiles an ECMAScript-style `pattern` (flags `i`, `m`, `s`; `u` is implied: RE2 matches code
 * points) for linear-time matching, unanchored as `RegExp.prototype.test`. ECMAScript's `\uXXXX`
 * and `\u{X…}` escapes are accepted; constructs RE2 has no linear-time form for throw
 * {@link UnsupportedPattern}.
 */
export function linearRegExp(pattern: string, flags = ""): LinearRegExp {
  let re2Flags = 0;
  if (flags.includes("i")) re2Flags |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes("m")) re2Flags |= RE2JS.MULTILINE;
  if (flags.includes("s")) re2Flags |= RE2JS.DOTALL;
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(toRe2Syntax(pattern), re2Flags);
  } catch (err) {
    const message = err instanceof Error ? err.message.replace(/^error parsing regexp: /, "") : String(err);
    throw new UnsupportedPattern(pattern, message);
  }
  const source = `/${pattern}/${flags}`;
  return { test: (input) => compiled.test(input), toString: () => source };
}

/** ajv's `code.regExp` option: every `pattern` / `patternProperties` compiles through this. */
export const ajvLinearRegExp = Object.assign((pattern: string, u: string) => linearRegExp(pattern, u), { code: "linearRegExp" });

// A surrogate pair spelled as two `\u` escapes is one code point to ECMAScript's `u` flag.
const SURROGATE_PAIR = /\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})/g;

/**
 * ECMAScript syntax in RE2's spelling (re2js's own translation: `\uXXXX`, `\u{…}`, `\cX`, `[^]`,
 * named groups), with a surrogate pair of escapes joined into one code point first.
 */
function toRe2Syntax(pattern: string): string {
  const joined = pattern.replace(SURROGATE_PAIR, (_all, high: string, low: string) => {
    const code = 0x10000 + ((parseInt(high, 16) - 0xd800) << 10) + (parseInt(low, 16) - 0xdc00);
    return `\\u{${code.toString(16)}}`;
  });
  return RE2JS.translateRegExp(joined);
}
