/**
 * ECMAScript patterns in RE2's spelling (issue 24's review): a caller's `pattern` means what it
 * means in ECMAScript's `u` mode, or is refused naming the construct. RE2's own `.` matched `\r`,
 * U+2028 and U+2029, and its `\s` only ASCII blanks: the translation spells ECMAScript's sets.
 */
import { describe, expect, it } from "vitest";
import { linearRegExp } from "../../../src/drive/linear-regexp.ts";
import { re2Syntax } from "../../../src/drive/pattern-syntax.ts";

/** Pattern, text: each must answer as ECMAScript's `u` mode does. */
const SAME_AS_ECMASCRIPT: [string, string][] = [
  ["^.+$", "a\rb"],
  ["^.+$", "a\u2028b"],
  ["^.+$", "a\u2029b"],
  ["^.+$", "a\nb"],
  ["^.+$", "a\u0085b"],
  ["^.+$", "ab😀"],
  ["^a.c$", "a😀c"],
  ["^\\s$", "\ufeff"],
  ["^\\s$", "\u00a0"],
  ["^\\s$", "\u2028"],
  ["^\\S$", "\u3000"],
  ["^[\\S]+$", "ab"],
  ["^[x\\S]$", " "],
  ["^[^\\n]*$", "a\rb"],
  ["^[]$", "a"],
  ["^[^]$", "\n"],
  ["^[[]$", "["],
  ["^\\uD83D\\uDE00$", "😀"],
  ["^\\u{1F600}$", "😀"],
  ["^\\x41\\cJ$", "A\n"],
  ["^\\p{Lu}+$", "ÀB"],
  ["^\\p{Script=Greek}$", "λ"],
  ["^(?<year>\\d{4})$", "2024"],
  ["^[\\b]$", "\b"],
  ["\\bword\\b", "a word."],
];

describe("pattern syntax", () => {
  it("answers as ECMAScript's u mode does (line terminators, blanks, classes, escapes)", () => {
    for (const [pattern, text] of SAME_AS_ECMASCRIPT) {
      expect(linearRegExp(pattern).test(text), `${JSON.stringify(pattern)} on ${JSON.stringify(text)}`).toBe(new RegExp(pattern, "u").test(text));
    }
  });

  it("`.` excludes ECMAScript's four line terminators; the `s` flag (built-in formats) takes them all", () => {
    for (const terminator of ["\n", "\r", "\u2028", "\u2029"]) {
      expect(linearRegExp("^a.b$").test(`a${terminator}b`), JSON.stringify(terminator)).toBe(false);
      expect(linearRegExp("^a.b$", "s").test(`a${terminator}b`), JSON.stringify(terminator)).toBe(true);
    }
  });

  it("refuses, naming the construct, what has no linear-time form or is not ECMAScript syntax", () => {
    const refusals: [string, RegExp][] = [
      ["(?=a)", /a lookahead/],
      ["(?<!a)b", /a lookbehind/],
      ["(a)\\1", /a backreference \\1/],
      ["(?<n>a)\\k<n>", /a backreference \\k/],
      ["(?i)abc", /inline flags/],
      ["a{", /does not start a repetition count/],
      ["a]", /a lone "\]"/],
      ["\\uD800", /a lone surrogate/],
    ];
    for (const [pattern, reason] of refusals) expect(() => re2Syntax(pattern), pattern).toThrow(reason);
    expect(() => re2Syntax("[^\\S]")).toThrow(/negated character class/);
  });
});
