import { readFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { join } from "node:path";
import type { Hono } from "hono";

const PAGE_DIR = join(import.meta.dirname, "page");
/**
 * The client's record-to-view rules, the same module `resolute-harness/client` exports, served
 * to the page with its types stripped (it imports only types): no build step, one implementation.
 */
const MESSAGE_VIEW = join(import.meta.dirname, "..", "..", "src", "client", "message-view.ts");

/** The page's files, read once at start: path → [content type, bytes]. */
const FILES: Record<string, [string, string]> = {
  "/": ["text/html; charset=utf-8", "index.html"],
  "/chat.js": ["text/javascript; charset=utf-8", "chat.js"],
  "/chat.css": ["text/css; charset=utf-8", "chat.css"],
};

/**
 * Serves the chat page from the app's own origin, so it calls the harness without CORS. A strict
 * Content-Security-Policy: the page runs only its own script and talks only to this origin.
 */
export function mountChatPage(app: Hono): void {
  const files = Object.entries(FILES).map(([path, [type, file]]) => [path, type, readFileSync(join(PAGE_DIR, file), "utf8")] as const);
  files.push(["/message-view.js", "text/javascript; charset=utf-8", stripTypeScriptTypes(readFileSync(MESSAGE_VIEW, "utf8"))]);
  for (const [path, type, body] of files) {
    app.get(path, (c) =>
      c.body(body, 200, {
        "content-type": type,
        "cache-control": "no-cache",
        "content-security-policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
        "x-content-type-options": "nosniff",
      }),
    );
  }
}
