import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * A syntax error in a module as `file:line:column: message` and a code frame (the line before,
 * the line, a caret under the column). Node puts the file, the line and a caret in the error's
 * stack above the message, but says only the message when asked for it (type stripping's
 * "Expression expected" alone). `shown` renders the file's path. `undefined` when the error
 * carries no location (then its message is all there is to say).
 */
export function syntaxErrorFrame(err: unknown, shown: (path: string) => string): string | undefined {
  if (!(err instanceof SyntaxError) || typeof err.stack !== "string") return undefined;
  // "<file>:<line>\n<source line(s)>\n<spaces>^…\n\nSyntaxError…": the caret is under the column.
  const located = /^(.+?):(\d+)\n([\s\S]*?)\n( *)\^+\s*\n/.exec(err.stack);
  if (!located) return undefined;
  const [, where, lineText, , indent] = located as unknown as [string, string, string, string, string];
  const path = where.startsWith("file://") ? fileURLToPath(where) : where;
  const line = Number(lineText);
  const column = indent.length + 1;
  let frame = "";
  try {
    const lines = readFileSync(path, "utf8").split("\n");
    const width = String(line).length;
    const gutter = (n: number) => `${String(n).padStart(width)} | `;
    const shownLines = line > 1 ? [line - 1, line] : [line];
    frame = shownLines.map((n) => `  ${gutter(n)}${lines[n - 1] ?? ""}`).join("\n");
    frame += `\n  ${" ".repeat(width)} | ${" ".repeat(column - 1)}^`;
  } catch {
    // The file changed or went away meanwhile: the location alone.
  }
  return `${shown(path)}:${line}:${column}: ${err.message}${frame === "" ? "" : `\n${frame}`}`;
}
