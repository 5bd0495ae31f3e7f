// Sign-in for a harness whose API wants a bearer token (ADR 0043): the token is kept in this tab's
// sessionStorage (gone when the tab closes, never sent anywhere but the page's own origin) and sent
// as `Authorization: Bearer` on every request and stream. It comes from the token field the page
// shows when the API answers 401, or from a sign-in page (`signIn.url`, e.g. Cognito's hosted UI
// with the implicit flow) that sends the browser back with `#access_token=…` in the fragment.

const KEY = "harness-chat:token";
/** Where the tab was when it left for the sign-in page (its agent, instance and session), to come back to. */
const RETURN_KEY = "harness-chat:return";

/** The token this tab signed in with, or "". */
export function storedToken() {
  try {
    return sessionStorage.getItem(KEY) ?? "";
  } catch {
    return ""; // storage disabled: no token
  }
}

export function storeToken(token) {
  try {
    if (token) sessionStorage.setItem(KEY, token);
    else sessionStorage.removeItem(KEY);
  } catch {
    // storage disabled: the token is not kept
  }
}

/**
 * A token the sign-in page returned in the URL fragment (`#access_token=…`, else `#id_token=…`):
 * stored, and the fragment cleared at once so the token is neither shown, bookmarked nor kept in
 * the tab's history. Answers whether one was taken.
 */
export function takeTokenFromFragment() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("access_token") || fragment.get("id_token");
  if (!fragment.has("access_token") && !fragment.has("id_token") && !fragment.has("error")) return false;
  let back = "";
  try {
    back = sessionStorage.getItem(RETURN_KEY) ?? "";
    sessionStorage.removeItem(RETURN_KEY);
  } catch {
    // storage disabled: back to the page the sign-in page named
  }
  // Only a path of this page's own origin (what the link stored), never a URL of elsewhere.
  history.replaceState(null, "", back.startsWith("/") && !back.startsWith("//") ? back : `${location.pathname}${location.search}`);
  if (!token) return false;
  storeToken(token);
  return true;
}

/**
 * The value of `claim` in the tab's token (a JWT's payload, read, not verified: the server
 * verifies; this only picks the address the page opens), or "".
 */
export function tokenClaim(claim) {
  try {
    const payload = storedToken().split(".")[1] ?? "";
    const json = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
    const value = json?.[claim];
    return typeof value === "string" ? value : "";
  } catch {
    return ""; // not a JWT (an operator's token)
  }
}

/** The request's headers with the bearer token, when the tab has one. */
export function withToken(headers = {}) {
  const token = storedToken();
  return token ? { ...headers, authorization: `Bearer ${token}` } : headers;
}

/**
 * The sign-in panel: shown when the API answers 401. A token field (pasted from wherever the
 * deployment hands them out), and a "Sign in" link to `signInUrl` when the server names one.
 */
export class SignIn {
  /**
   * @param {HTMLElement} panel @param {string | undefined} signInUrl
   * @param {() => void} onToken called once a token is saved (the page reads everything again)
   * @param {() => string} returnTo the page's path to come back to from the sign-in page
   */
  constructor(panel, signInUrl, onToken, returnTo) {
    this.panel = panel;
    const link = panel.querySelector("#sign-in-link");
    if (signInUrl) {
      link.href = signInUrl;
      // The sign-in page returns to one fixed address: remember this tab's agent, instance and session.
      link.addEventListener("click", () => {
        try {
          sessionStorage.setItem(RETURN_KEY, returnTo());
        } catch {
          // storage disabled: the page the sign-in page returns to
        }
      });
    } else {
      link.remove();
    }
    panel.querySelector("#token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const field = panel.querySelector("#token");
      const token = field.value.trim();
      if (token === "") return;
      storeToken(token);
      field.value = "";
      this.hide();
      onToken();
    });
  }

  /** The API refused the tab's token (or it has none): ask for one. */
  show() {
    // Already asking (a request and the stream refused alike): keep the reason shown first.
    if (!this.panel.hidden) return storeToken("");
    const had = storedToken() !== "";
    // A refused token is of no use any more.
    storeToken("");
    this.panel.querySelector("#sign-in-why").textContent = had
      ? "The server did not accept your token (it may have expired). Sign in again."
      : "This server wants you to sign in.";
    this.panel.hidden = false;
    document.body.dataset.auth = "required";
  }

  hide() {
    this.panel.hidden = true;
    document.body.dataset.auth = storedToken() ? "signed-in" : "none";
  }
}
