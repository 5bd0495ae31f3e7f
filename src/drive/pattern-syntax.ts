/**
 * A JSON Schema `pattern` (ECMAScript syntax, `u` mode, as ajv compiles it) rewritten in RE2's
 * syntax with ECMAScript's meaning, or refused naming the construct: RE2 has no lookarounds or
 * backreferences, and its spelling differs where the two share a construct (`.` and `\s` cover
 * more characters in ECMAScript, `[` inside a class and `\Q`, `(?i)` are RE2 syntax only).
 * The differences that remain are listed in docs/adr/0026.
 */

/** Why a pattern cannot be translated (the construct, in a user's words). */
export class PatternRefusal extends Error {
  readonly code = "pattern_refused";
}

/** ECMAScript's `\s`: WhiteSpace and LineTerminator (RE2's `\s` is ASCII only). */
const SPACE_SET = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

/** ECMAScript's `.` without the `s` flag: anything but a line terminator (RE2's `.` excludes only `\n`). */
const DOT = "[^\\n\\r\\x{2028}\\x{2029}]";

/** Escapes of syntax characters, the same in both languages. */
const SYNTAX_CHARACTERS = new Set([..."^$\\.*+?()[]{}|/"]);

/** Prefixes of `\p{…}` that name the same thing RE2's bare name does. */
const PROPERTY_PREFIX = /^(?:General_Category|gc|Script|sc)=/;

/** Translates `pattern` (`dotAll`: the `s` flag, which only built-in formats use). */
export function re2Syntax(pattern: string, dotAll = false): string {
  return new Translation(pattern, dotAll).run();
}

class Translation {
  #i = 0;
  readonly #p: string;
  readonly #dotAll: boolean;

  constructor(pattern: string, dotAll: boolean) {
    this.#p = pattern;
    this.#dotAll = dotAll;
  }

  run(): string {
    let out = "";
    const p = this.#p;
    while (this.#i < p.length) {
      const ch = p[this.#i]!;
      if (ch === "\\") {
        out += this.#escape(false).text;
      } else if (ch === "[") {
        out += this.#characterClass();
      } else if (ch === "(") {
        out += this.#group();
      } else if (ch === ".") {
        this.#i++;
        out += this.#dotAll ? "(?s:.)" : DOT;
      } else if (ch === "{") {
        out += this.#counted();
      } else if (ch === "}" || ch === "]") {
        throw new PatternRefusal(`a lone "${ch}" (a syntax error in ECMAScript's u mode)`);
      } else {
        const cp = p.codePointAt(this.#i)!;
        const text = String.fromCodePoint(cp);
        this.#i += text.length;
        out += text;
      }
    }
    return out;
  }

  /** `{n}`, `{n,}`, `{n,m}` after an atom (RE2 checks what precedes it). */
  #counted(): string {
    const m = this.#match(/\{\d+(?:,\d*)?\}/y);
    if (m === null) throw new PatternRefusal('a "{" that does not start a repetition count {n}, {n,} or {n,m} (escape it as \\{)');
    return m[0];
  }

  /** `re` (sticky) at the cursor, which moves past the match. */
  #match(re: RegExp): RegExpExecArray | null {
    re.lastIndex = this.#i;
    const m = re.exec(this.#p);
    if (m !== null) this.#i += m[0].length;
    return m;
  }

  #group(): string {
    const p = this.#p;
    const rest = p.slice(this.#i, this.#i + 4);
    if (!rest.startsWith("(?")) {
      this.#i++;
      return "(";
    }
    if (rest.startsWith("(?:")) {
      this.#i += 3;
      return "(?:";
    }
    if (rest.startsWith("(?=") || rest.startsWith("(?!")) throw new PatternRefusal("a lookahead (?= or (?! (no linear-time form)");
    if (rest.startsWith("(?<=") || rest.startsWith("(?<!")) throw new PatternRefusal("a lookbehind (?<= or (?<! (no linear-time form)");
    const named = this.#match(/\(\?<([A-Za-z_$][\w$]*)>/y);
    if (named !== null) {
      return `(?P<${named[1]}>`;
    }
    throw new PatternRefusal(`the group "${rest}…": inline flags and other (? groups are not ECMAScript syntax`);
  }

  /**
   * One escape at the cursor. Inside a class, `\b` is a backspace and `\S` (which RE2 spells
   * differently) is returned apart for the class to hoist.
   */
  #escape(inClass: boolean): { text: string; notSpace?: boolean } {
    const p = this.#p;
    const next = p[this.#i + 1];
    if (next === undefined) throw new PatternRefusal("a trailing backslash");
    const two = `\\${next}`;
    switch (next) {
      case "d":
      case "D":
      case "w":
      case "W":
      case "f":
      case "n":
      case "r":
      case "t":
        this.#i += 2;
        return { text: two };
      case "v":
        this.#i += 2;
        return { text: "\\x{0B}" };
      case "s":
        this.#i += 2;
        return { text: inClass ? SPACE_SET : `[${SPACE_SET}]` };
      case "S":
        this.#i += 2;
        return inClass ? { text: "", notSpace: true } : { text: `[^${SPACE_SET}]` };
      case "b":
      case "B":
        this.#i += 2;
        if (!inClass) return { text: two };
        if (next === "b") return { text: "\\x{08}" };
        throw new PatternRefusal("\\B inside a character class (a syntax error in ECMAScript's u mode)");
      case "0":
        if (/[0-9]/.test(p[this.#i + 2] ?? "")) throw new PatternRefusal("an octal escape (a syntax error in ECMAScript's u mode)");
        this.#i += 2;
        return { text: "\\x{0}" };
      case "k":
        throw new PatternRefusal("a backreference \\k<…> (no linear-time form)");
      case "c": {
        const letter = p[this.#i + 2] ?? "";
        if (!/[A-Za-z]/.test(letter)) throw new PatternRefusal("\\c without a letter (a syntax error in ECMAScript's u mode)");
        this.#i += 3;
        return { text: `\\x{${(letter.charCodeAt(0) % 32).toString(16)}}` };
      }
      case "x": {
        const hex = this.#match(/\\x([0-9A-Fa-f]{2})/y);
        if (hex === null) throw new PatternRefusal("\\x without two hexadecimal digits (a syntax error in ECMAScript's u mode)");
        return { text: `\\x{${hex[1]}}` };
      }
      case "u":
        return { text: `\\x{${this.#codePoint().toString(16)}}` };
      case "p":
      case "P":
        return { text: this.#property(next) };
      default:
        if (/[1-9]/.test(next)) throw new PatternRefusal(`a backreference \\${next} (no linear-time form)`);
        if (SYNTAX_CHARACTERS.has(next) || (inClass && next === "-")) {
          this.#i += 2;
          return { text: two };
        }
        throw new PatternRefusal(`the escape ${two} (a syntax error in ECMAScript's u mode)`);
    }
  }

  /** `\uXXXX` (a surrogate pair of two such escapes is one code point) or `\u{X…}`. */
  #codePoint(): number {
    const p = this.#p;
    const braced = this.#match(/\\u\{([0-9A-Fa-f]{1,6})\}/y);
    if (braced !== null) {
      const cp = parseInt(braced[1]!, 16);
      if (cp > 0x10ffff) throw new PatternRefusal(`the escape ${braced[0]} (beyond U+10FFFF)`);
      return cp;
    }
    const four = this.#match(/\\u([0-9A-Fa-f]{4})/y);
    if (four === null) throw new PatternRefusal("\\u without four hexadecimal digits or {…} (a syntax error in ECMAScript's u mode)");
    const high = parseInt(four[1]!, 16);
    if (high >= 0xd800 && high <= 0xdbff) {
      const low = this.#match(/\\u(d[c-f][0-9a-f]{2})/iy);
      if (low !== null) {
        return 0x10000 + ((high - 0xd800) << 10) + (parseInt(low[1]!, 16) - 0xdc00);
      }
    }
    if (high >= 0xd800 && high <= 0xdfff) throw new PatternRefusal(`a lone surrogate \\u${four[1]} (RE2 matches whole code points)`);
    return high;
  }

  /** `\p{…}` / `\P{…}`: general categories and scripts by RE2's names (`Lu`, `L`, `Greek`). */
  #property(letter: string): string {
    const m = this.#match(/\\[pP]\{([A-Za-z_=]+)\}/y);
    if (m === null) throw new PatternRefusal(`\\${letter} without {name} (a syntax error in ECMAScript's u mode)`);
    return `\\${letter}{${m[1]!.replace(PROPERTY_PREFIX, "")}}`;
  }

  /** `[…]`: `[]` and `[^]` as ECMAScript reads them, `[` escaped (RE2 reads `[:alpha:]`), `\S` hoisted. */
  #characterClass(): string {
    const p = this.#p;
    this.#i++;
    const negated = p[this.#i] === "^";
    if (negated) this.#i++;
    let members = "";
    let notSpace = false;
    for (;;) {
      const ch = p[this.#i];
      if (ch === undefined) throw new PatternRefusal('a character class without its closing "]"');
      if (ch === "]") {
        this.#i++;
        break;
      }
      if (ch === "\\") {
        const escape = this.#escape(true);
        members += escape.text;
        notSpace ||= escape.notSpace === true;
      } else if (ch === "[") {
        this.#i++;
        members += "\\[";
      } else {
        const text = String.fromCodePoint(p.codePointAt(this.#i)!);
        this.#i += text.length;
        members += text;
      }
    }
    if (notSpace) {
      if (negated) throw new PatternRefusal("\\S inside a negated character class (RE2 cannot spell it)");
      return members === "" ? `[^${SPACE_SET}]` : `(?:[${members}]|[^${SPACE_SET}])`;
    }
    // RE2 reads `[]` and `[^]` as the start of a class holding "]": ECMAScript's nothing and anything.
    if (members === "") return negated ? "[\\x{0}-\\x{10FFFF}]" : "[^\\x{0}-\\x{10FFFF}]";
    return `[${negated ? "^" : ""}${members}]`;
  }
}
