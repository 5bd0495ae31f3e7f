import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Hono } from "hono";

const PAGE_DIR = join(import.meta.dirname, "page");

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
  for (const [path, [type, file]] of Object.entries(FILES)) {
    const body = readFileSync(join(PAGE_DIR, file), "utf8");
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
