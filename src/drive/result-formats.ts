/**
 * The `format`s a result schema may use: ajv-formats' full set, with every format that is a
 * regular expression matched on the linear-time engine, and `url` (whose expression backtracks
 * quadratically: `http://` followed by 8,000 `::` took 0.9 s) checked by the URL parser instead.
 * The formats ajv-formats writes as functions (dates, times, `uri`, `byte`, `regex`, numbers) are
 * kept: their expressions are anchored and unambiguous (test/unit/drive/result-schema-engine.test.ts
 * pumps every format with attack strings near the text cap).
 */
import type { Format } from "ajv";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { linearRegExp, UnsupportedPattern } from "./linear-regexp.ts";

type FormatDefinition = Exclude<Format, true | string | RegExp | ((data: string) => boolean)>;

/** Formats whose expressions use lookarounds (which RE2 lacks) and are linear as V8 runs them. */
const LINEAR_IN_V8 = new Set(["hostname", "duration"]);

/** `url` without backtracking: an absolute http, https or ftp URL with a host, as the URL parser reads it. */
function isUrl(value: string): boolean {
  if (/\s/.test(value)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return ["http:", "https:", "ftp:"].includes(url.protocol) && url.hostname !== "";
}

/** The format table handed to ajv (`formats` option). */
export function resultFormats(): Record<string, Format> {
  const formats: Record<string, Format> = {};
  for (const [name, format] of Object.entries(fullFormats as Record<string, Format>)) {
    if (name === "url") {
      formats[name] = isUrl;
    } else if (format instanceof RegExp) {
      formats[name] = linear(name, format);
    } else if (typeof format === "object" && (format as FormatDefinition).validate instanceof RegExp) {
      const def = format as FormatDefinition & { validate: RegExp };
      formats[name] = { ...def, validate: linear(name, def.validate) } as Format;
    } else {
      formats[name] = format;
    }
  }
  return formats;
}

function linear(name: string, re: RegExp): Format {
  if (LINEAR_IN_V8.has(name)) return re;
  try {
    const compiled = linearRegExp(re.source, re.flags);
    return (value: string) => compiled.test(value);
  } catch (err) {
    // A new ajv-formats version with a construct RE2 lacks: fail loudly, never fall back silently.
    if (err instanceof UnsupportedPattern) throw new Error(`format ${name}: ${err.message}`);
    throw err;
  }
}
