/**
 * What the CLI prints from a server goes to an operator's terminal, and the server's text comes
 * from models and users (issue 33, point 9): an escape sequence in it could set the window title,
 * clear the screen, plant an OSC 8 hyperlink, or (`\r`) overwrite what the line said. Every string
 * from the server passes through {@link terminalText} (or {@link terminalJson} for JSON output)
 * before it is printed, so a control character shows as a visible escape (`\x1b`) instead of
 * acting. The characters are the log lines' (`escapeControl`): C0 and C1 controls, DEL, the
 * Unicode line separators and the bidirectional controls.
 */
import { escapeControl } from "../logging/console.ts";

/** What JSON.stringify leaves raw among `escapeControl`'s characters (it escapes all of C0 itself). */
const JSON_RAW_CONTROL = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * `text` made safe to print: every control character as a visible escape. `layout: true` keeps
 * newlines and tabs (a message body's lines; a `\r\n` counts as a newline), for text whose line
 * breaks are meant; the default escapes them too (a name, an id, a reason, a table cell).
 */
export function terminalText(text: string, options: { layout?: boolean } = {}): string {
  if (!options.layout) return escapeControl(text);
  // Odd parts are the kept separators.
  return text
    .replace(/\r\n/g, "\n")
    .split(/([\n\t])/)
    .map((part, i) => (i % 2 === 1 ? part : escapeControl(part)))
    .join("");
}

/**
 * `value` as JSON safe to print: the characters JSON.stringify leaves raw (DEL, C1, line
 * separators, bidi controls) as `\u` escapes, so the JSON still parses to the same value.
 */
export function terminalJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(JSON_RAW_CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
