import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Hono } from "hono";

/** The console's files, served as they are (plain ES modules: no build step). */
export const CONSOLE_FILES = ["index.html", "console.css", "console.js", "api.js", "timeline.js"] as const;

/** Where the page's files are: beside this module, in the sources and in `dist/` alike. */
export const CONSOLE_PAGE_DIR = join(import.meta.dirname, "page");
/** Where a Lambda bundle carries them (the construct copies them there): its root, this code at its root or in `chunks/`. */
export const CONSOLE_BUNDLE_DIR = "console-page";

function pageDir(): string {
  const candidates = [CONSOLE_PAGE_DIR, join(import.meta.dirname, CONSOLE_BUNDLE_DIR), join(import.meta.dirname, "..", CONSOLE_BUNDLE_DIR)];
  const found = candidates.find((dir) => existsSync(join(dir, "index.html")));
  if (found === undefined) throw new Error(`mountConsole: the console's page files are not in ${candidates.join(", ")}`);
  return found;
}

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
};

/**
 * As the chat page's: the console runs only its own scripts, talks only to its own origin, loads
 * nothing from elsewhere and cannot be framed (a framing page could click its approve buttons).
 */
const HEADERS = {
  "cache-control": "no-cache",
  "content-security-policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/**
 * Serves the console (ADR 0054) at `/console` of the app (its scripts and styles under
 * `/console/`): conversations across agents and instances, a submission's timeline, the approvals
 * inbox, failures and numbers. The page is open; what it shows comes from the API, whose
 * `/console/api/*` reads are the operator's alone (the policy's `console` action: 403 for anyone
 * else), and which asks for the operator's token on a 401 when auth is on. `serve()` mounts it
 * unless told `console: false`; the http function mounts it when an operator token is configured.
 * @throws {Error} when the page's files are not where the package (or a Lambda bundle) keeps them
 *
 * @example serve(runtime, { routes: (app) => mountConsole(app) })
 */
export function mountConsole(app: Hono): void {
  const dir = pageDir();
  const files = new Map(CONSOLE_FILES.map((f) => [f, readFileSync(join(dir, f), "utf8")]));
  const send = (file: (typeof CONSOLE_FILES)[number]) => (c: { body: (b: string, s: 200, h: Record<string, string>) => Response }) =>
    c.body(files.get(file)!, 200, { ...HEADERS, "content-type": TYPES[file.slice(file.lastIndexOf(".") + 1)]! });
  app.get("/console", send("index.html"));
  app.get("/console/", send("index.html"));
  for (const file of CONSOLE_FILES) if (file !== "index.html") app.get(`/console/${file}`, send(file));
}
