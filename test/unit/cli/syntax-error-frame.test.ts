import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { syntaxErrorFrame } from "../../../src/cli/syntax-error-frame.ts";

const dir = mkdtempSync(join(tmpdir(), "harness-syntax-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The SyntaxError Node gives for importing `source` (as `name`), stack and all, from a child Node. */
function nodeSyntaxError(name: string, source: string): SyntaxError {
  writeFileSync(join(dir, name), source);
  const script = `import(${JSON.stringify(join(dir, name))}).catch((e) => process.stdout.write(JSON.stringify({ message: e.message, stack: e.stack })))`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  const { message, stack } = JSON.parse(out) as { message: string; stack: string };
  const err = new SyntaxError(message);
  err.stack = stack;
  return err;
}

describe("syntaxErrorFrame (issue 37: harness dev said 'Expression expected' alone)", () => {
  it("a TypeScript file's syntax error: file:line:column, the message, and a frame with a caret under the column", () => {
    const err = nodeSyntaxError("agents.ts", 'const a: number = 1;\nexport const agents = ;\nexport {};\n');
    expect(err.message).toBe("Expression expected");
    expect(syntaxErrorFrame(err, basename)).toBe(
      ["agents.ts:2:23: Expression expected", "  1 | const a: number = 1;", "  2 | export const agents = ;", "    |                       ^"].join("\n"),
    );
  });

  it("an error in the middle of a statement (Node's frame goes on past the caret); another error, or one without a location, is not framed", () => {
    const err = nodeSyntaxError("tools.ts", "export const x = {\n  a: 1,\n  b 2,\n};\n");
    expect(syntaxErrorFrame(err, basename)).toMatch(/^tools\.ts:3:5: Unexpected token .+\n  2 \|   a: 1,\n  3 \|   b 2,\n    \|     \^$/);
    expect(syntaxErrorFrame(new TypeError("x"), basename)).toBeUndefined();
    expect(syntaxErrorFrame(new SyntaxError("Unexpected token"), basename)).toBeUndefined();
  });
});
