import type { Hono } from "hono";
import { chatPageAssets, type ChatPageAssets } from "./assets.ts";

/** What {@link mountChatPage} serves. */
export interface ChatPageOptions {
  /** The agents the page offers (its agent selector; `?agent=` picks one). The first is the default. */
  agents: readonly string[];
  /** The page's heading and tab title. Default "resolute-harness chat". */
  title?: string;
  /** The message box's placeholder. Default "Message <agent>…". */
  placeholder?: string;
}

const TYPES: Record<keyof ChatPageAssets, string> = {
  "index.html": "text/html; charset=utf-8",
  "chat.css": "text/css; charset=utf-8",
  "chat.js": "text/javascript; charset=utf-8",
  "chat.js.LICENSE.txt": "text/plain; charset=utf-8",
};

/**
 * The page runs only its own script, talks only to its own origin, loads no image from elsewhere
 * (a markdown image in a reply cannot send the conversation away) and cannot be framed.
 */
const HEADERS = {
  "cache-control": "no-cache",
  "content-security-policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/**
 * Serves the chat page at `/` of the app (`/chat.js`, `/chat.css`, `/chat-config.json` beside it),
 * from the app's own origin, so it calls the harness without CORS. It renders a session of an
 * agent instance live from its records (markdown replies, tool calls, settlements), sends, steers,
 * cancels and compacts, switches sessions and lists the session's submissions. It has no sign-in
 * of its own: mount it where the `/agents` routes are open to whoever can open the page (a
 * loopback server, or behind your own auth middleware).
 *
 * @example serve(runtime, { routes: (app) => mountChatPage(app, { agents: ["assistant"] }) })
 */
export function mountChatPage(app: Hono, options: ChatPageOptions): void {
  // Loaded (and, from the sources, bundled) once, starting now; requests wait for it.
  const assets = chatPageAssets();
  assets.catch(() => {}); // reported by the request that needs it
  const config = JSON.stringify({ agents: options.agents, title: options.title, placeholder: options.placeholder });
  const routes: [string, keyof ChatPageAssets][] = [
    ["/", "index.html"],
    ["/chat.js", "chat.js"],
    ["/chat.css", "chat.css"],
    ["/chat.js.LICENSE.txt", "chat.js.LICENSE.txt"],
  ];
  for (const [path, file] of routes) {
    app.get(path, async (c) => c.body((await assets)[file], 200, { ...HEADERS, "content-type": TYPES[file] }));
  }
  app.get("/chat-config.json", (c) => c.body(config, 200, { ...HEADERS, "content-type": "application/json" }));
}
