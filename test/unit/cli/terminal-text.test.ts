import { describe, expect, it } from "vitest";
import { terminalJson, terminalText } from "../../../src/cli/terminal-text.ts";

describe("terminalText (issue 33: the CLI prints a server's text with its controls escaped)", () => {
  it("escapes ESC, BEL, CR, C1 and bidi controls; keeps newlines and tabs only in layout mode", () => {
    const text = "a\x1b]0;t\x07\rb\u009b2J\u202ec\n\td\r\ne";
    expect(terminalText(text)).toBe("a\\x1b]0;t\\x07\\rb\\x9b2J\\u202ec\\n\\td\\r\\ne");
    expect(terminalText(text, { layout: true })).toBe("a\\x1b]0;t\\x07\\rb\\x9b2J\\u202ec\n\td\ne");
    expect(terminalText("café — 😀 עברית")).toBe("café — 😀 עברית");
  });

  it("terminalJson is the same JSON value with no raw C1 or bidi character", () => {
    const value = { body: "x\u009b31m\u0085\u202e\x1b" };
    const json = terminalJson(value);
    expect(json).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(JSON.parse(json)).toEqual(value);
  });
});
