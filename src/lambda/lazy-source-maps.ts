/**
 * Bundled into every file of a Lambda asset (esbuild `inject`) when the construct's `sourceMaps`
 * is on (ADR 0037): stack traces point into the sources through the `.map` files beside the
 * bundle, read when a stack is first formatted instead of at cold start.
 *
 * Node's `--enable-source-maps` reads and parses every loaded file's map, and measures every
 * line of it, as the file loads: a sizeable share of each cold start, paid whether or not a stack
 * is ever formatted. Node cannot map a file loaded before the flag was turned on
 * (`process.setSourceMapsEnabled(true)` after init leaves the stacks of the files already loaded
 * unmapped), so instead this module installs `Error.prepareStackTrace`, which V8 calls when an
 * error's `stack` is first read: a frame in a file with a map beside it is mapped through
 * `node:module`'s `SourceMap`, in the format `--enable-source-maps` writes. A file's map is parsed
 * once per process, on the first stack through that file.
 *
 * No static import of the harness's modules: esbuild adds this module's import to every file of
 * the bundle, so it runs before them.
 */
import { readFileSync } from "node:fs";
import { SourceMap, type SourceMapping } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

type CallSite = NodeJS.CallSite & {
  getEnclosingLineNumber?(): number | null;
  getEnclosingColumnNumber?(): number | null;
};

/** The parsed map of each file (its URL), `null` when it has none: parsed on the first stack through it. */
const maps = new Map<string, SourceMap | null>();

function mapOf(fileName: string): SourceMap | null {
  let map = maps.get(fileName);
  if (map === undefined) {
    map = null;
    try {
      const url = fileName.startsWith("file:") ? new URL(fileName) : pathToFileURL(fileName);
      const mapUrl = new URL(`${url.href}.map`);
      const payload = JSON.parse(readFileSync(mapUrl, "utf8")) as { sources?: string[] };
      // Sources are relative to the map: made absolute, as Node's own source map cache does.
      payload.sources = payload.sources?.map((s) => new URL(s, mapUrl).href);
      map = new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]);
    } catch {
      // No map beside the file (not part of the bundle), or one that cannot be read: unmapped.
    }
    maps.set(fileName, map);
  }
  return map;
}

/** The map's entry at a generated position (0-based), if the position is mapped (Node's entries carry `name`; its types omit it). */
function entryAt(map: SourceMap, line: number, column: number): (SourceMapping & { name?: string }) | undefined {
  const entry = map.findEntry(line, column);
  return "originalSource" in entry ? entry : undefined;
}

/** The original name of the function a frame is in: from the map at the function's start, else at its caller's call. */
function originalName(map: SourceMap, site: CallSite, caller: CallSite | undefined): string | undefined {
  const line = site.getEnclosingLineNumber?.();
  const column = site.getEnclosingColumnNumber?.();
  if (line && column) {
    const name = entryAt(map, line - 1, column - 1)?.name;
    if (name) return name;
  }
  if (caller && caller.getFileName() === site.getFileName()) {
    const name = entryAt(map, (caller.getLineNumber() ?? 1) - 1, (caller.getColumnNumber() ?? 1) - 1)?.name;
    if (name) return name;
  }
  return undefined;
}

/** One frame, mapped when its file has a map, in V8's `at name (file:line:column)` form. */
function frame(site: CallSite, caller: CallSite | undefined): string {
  const fileName = site.getFileName();
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  const map = fileName && !fileName.startsWith("node:") && line && column ? mapOf(fileName) : null;
  if (!map || !line || !column) return String(site);
  const entry = entryAt(map, line - 1, column - 1);
  if (!entry) return String(site);
  const source = entry.originalSource.startsWith("file:") ? fileURLToPath(entry.originalSource) : entry.originalSource;
  const prefix = site.isAsync() ? "async " : site.isConstructor() ? "new " : "";
  const type = site.getTypeName();
  const name = originalName(map, site, caller) ?? (site.getFunctionName() || site.getMethodName() || "<anonymous>");
  return `${prefix}${type !== null && type !== "global" ? `${type}.` : ""}${name} (${source}:${entry.originalLine + 1}:${entry.originalColumn + 1})`;
}

/**
 * The first line as Node writes it: `name [code]: message` for Node's own errors (their prototype
 * carries Node's `kIsNodeError` symbol), else `Error.prototype.toString`.
 */
function heading(error: Error): string {
  try {
    for (let p = Object.getPrototypeOf(error) as object | null; p && p !== Error.prototype; p = Object.getPrototypeOf(p) as object | null) {
      if (Object.getOwnPropertySymbols(p).some((s) => s.description === "kIsNodeError")) {
        return `${error.name} [${String((error as { code?: unknown }).code)}]: ${error.message}`;
      }
    }
    return Error.prototype.toString.call(error);
  } catch {
    return "Error";
  }
}

Error.prepareStackTrace = (error: Error, sites: CallSite[]): string =>
  heading(error) + sites.map((site, i) => `\n    at ${safeFrame(site, sites[i + 1])}`).join("");

function safeFrame(site: CallSite, caller: CallSite | undefined): string {
  try {
    return frame(site, caller);
  } catch {
    return String(site);
  }
}
