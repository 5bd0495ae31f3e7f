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
  /**
   * Where a person signs in, for a harness whose API wants a bearer token (`createApp({auth})`).
   * When the API answers 401 the page shows a "Sign in" link to `url` beside its token field; the
   * sign-in page sends the browser back to the chat page with the token in the fragment
   * (`#access_token=…`, as Cognito's hosted UI does with `response_type=token`), which the page
   * keeps in the tab's sessionStorage and clears from the address bar. An `http:` or `https:` URL.
   */
  signIn?: { url: string };
  /**
   * For a signed-in person opening the page without `?instance=`: the claim of their token (a JWT)
   * whose value is the instance the page opens. Default `sub`, the default policy's owner; name the
   * server's `AUTH_OWNER_CLAIM` here when it sets one. Without a token, or a claim, `demo`.
   */
  instanceClaim?: string;
  /**
   * A folder holding the page's built files (`index.html`, `chat.js`, …) to serve instead of the
   * package's own: the construct writes them into the http function's asset. Default: the
   * package's, or, from the repository's sources, bundled at the first request.
   */
  assetsDir?: string;
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
 * cancels and compacts, switches sessions and lists the session's submissions. When the API
 * answers 401 (authentication on, ADR 0043) it asks for a token (a field, and a link to
 * `signIn.url` when set), kept in the tab's sessionStorage and sent as the bearer of every request
 * and stream; the page itself and its config stay open.
 * @throws {TypeError} `signIn.url` that is not an http(s) URL
 *
 * @example serve(runtime, { routes: (app) => mountChatPage(app, { agents: ["assistant"] }) })
 */
export function mountChatPage(app: Hono, options: ChatPageOptions): void {
  // Loaded (and, from the sources, bundled) once, starting now; requests wait for it.
  const assets = chatPageAssets(options.assetsDir);
  assets.catch(() => {}); // reported by the request that needs it
  const signIn = options.signIn === undefined ? undefined : { url: signInUrl(options.signIn.url) };
  const config = JSON.stringify({ agents: options.agents, title: options.title, placeholder: options.placeholder, signIn, instanceClaim: options.instanceClaim });
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

/** The sign-in page's URL, checked: a link the page shows must not run script (`javascript:`). */
function signInUrl(url: unknown): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(String(url));
  } catch {
    // named below
  }
  if (parsed === undefined || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    throw new TypeError(`mountChatPage: signIn.url must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  return parsed.href;
}
