/**
 * The typed client, checked by the TypeScript compiler (what `tsc --noEmit` does, on a fixture
 * with the repository's compiler options): `createClient<typeof agents>()` refuses a wrong
 * agent name and a wrong result field, and types `result` from the agent's `resultSchema` (or
 * the dispatch's). The fixture marks each line that must fail, and what the message must say.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");
const fixture = join(import.meta.dirname, "fixtures", "typed-client.ts");

it("a wrong agent name and a wrong result field do not compile; the right ones do", () => {
  const config = ts.readConfigFile(join(root, "tsconfig.json"), (f) => ts.sys.readFile(f));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const program = ts.createProgram([fixture], { ...options, noEmit: true });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const errors = diagnostics.map((d) => {
    const file = d.file?.fileName ?? "";
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    return { file, line, message: ts.flattenDiagnosticMessageText(d.messageText, "\n") };
  });
  // Nothing outside the fixture fails (the sources it imports compile).
  expect(errors.filter((e) => e.file !== fixture)).toEqual([]);

  const expected = readFileSync(fixture, "utf8")
    .split("\n")
    .map((text, i) => ({ line: i + 1, marker: /\/\/ expect-error: (.+)$/.exec(text)?.[1] }))
    .filter((l): l is { line: number; marker: string } => l.marker !== undefined);
  expect(expected.length).toBe(5);
  expect(errors.map((e) => e.line).sort((a, b) => a - b)).toEqual(expected.map((e) => e.line));
  for (const { line, marker } of expected) {
    const error = errors.find((e) => e.line === line)!;
    expect(error.message, `line ${line}`).toContain(marker);
  }
}, 60_000);
