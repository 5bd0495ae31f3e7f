/**
 * The chat page against a harness with authentication on (ADR 0043, issue 34), in headless
 * Chromium: the API answers 401, so the page shows its sign-in panel (a token field, and a
 * "Sign in" link to the configured sign-in page); a token typed in makes a message go through,
 * stream included; a sign-in page that returns `#access_token=…` (what Cognito's hosted UI does
 * with the implicit flow) signs the tab in and the fragment is cleared; a refused token asks
 * again. The page keeps its CSP (`connect-src 'self'`). The token issuer is a local OIDC issuer;
 * the "hosted UI" a small server that signs a token and redirects back with it.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser, type Page } from "playwright-core";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jwtAuthenticator } from "../../../src/auth/jwt-authenticator.ts";
import { mountChatPage } from "../../../src/chat-page/mount-chat-page.ts";
import { startOidcIssuer, type OidcIssuer } from "../../support/oidc-issuer.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";
import { accessibilityViolations, CHROMIUM, expectTidyLayout } from "./browser.ts";
import { freePort } from "./support.ts";

if (!CHROMIUM) console.warn("chat page sign-in browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const AUDIENCE = "chat-page-client";
const POLL = { timeout: 20_000 };

let issuer: OidcIssuer;
let h: TestServer;
let hostedUi: Server;
let hostedUrl = "";
let browser: Browser;
/** The principals the server authenticated, request by request. */
const seen: string[] = [];

beforeAll(async () => {
  if (!CHROMIUM) return;
  issuer = await startOidcIssuer();
  const port = await freePort();
  // The "hosted UI": signs alice in at once and sends her back with the token in the fragment.
  hostedUi = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname !== "/oauth2/authorize") return void res.writeHead(404).end();
    const back = url.searchParams.get("redirect_uri") ?? "";
    void issuer.sign(AUDIENCE, { sub: "alice" }).then((token) => {
      res.writeHead(302, { location: `${back}#access_token=${token}&token_type=Bearer&expires_in=3600&state=s` }).end();
    });
  });
  await new Promise<void>((resolve) => hostedUi.listen(0, "127.0.0.1", resolve));
  hostedUrl = `http://127.0.0.1:${(hostedUi.address() as AddressInfo).port}`;
  const chatUrl = `http://127.0.0.1:${port}/`;
  const jwt = jwtAuthenticator({ issuer: issuer.url, audience: AUDIENCE });
  h = await startTestServer({
    port,
    auth: {
      authenticate: async (request) => {
        const principal = await jwt(request);
        seen.push(principal?.id ?? "anonymous");
        return principal;
      },
    },
    routes: (app) =>
      mountChatPage(app, {
        agents: ["assistant"],
        signIn: { url: `${hostedUrl}/oauth2/authorize?response_type=token&client_id=${AUDIENCE}&redirect_uri=${encodeURIComponent(chatUrl)}` },
      }),
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await new Promise((resolve) => (hostedUi ? hostedUi.close(resolve) : resolve(undefined)));
  await issuer?.close();
});

async function openChat(path = "/?instance=alice"): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  page.on("pageerror", (err: Error) => errors.push(err.message));
  await page.goto(`${h.url}${path}`);
  return { page, errors };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#message", text);
  await page.click("#send");
}
const reply = (page: Page) => page.locator('.item[data-kind="assistant"]').last();

describe.skipIf(!CHROMIUM)("the chat page with authentication on", { timeout: 90_000 }, () => {
  it("asks for a token when the API answers 401; a token typed in opens the person's own instance and a message goes through, its reply streamed", async () => {
    // No ?instance=: "demo" until signed in, then the token's sub (the default policy's owner).
    const { page, errors } = await openChat("/");
    await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe("demo");
    await expect.poll(() => page.locator("#sign-in").isVisible(), POLL).toBe(true);
    expect(await page.locator("#sign-in-why").textContent()).toBe("This server wants you to sign in.");
    expect(await page.locator("#sign-in-link").getAttribute("href")).toMatch(new RegExp(`^${hostedUrl}/oauth2/authorize\\?response_type=token`));
    // The panel is laid out with the rest and passes axe like the page around it.
    expect(await accessibilityViolations(page)).toEqual([]);
    await expectTidyLayout(page, { width: 1280, height: 720 });
    // Nothing goes through without a token.
    await send(page, "hello without a token");
    await expect.poll(() => page.locator("#error").textContent(), POLL).toBe("Sign in to use this server: see above.");

    await page.fill("#token", await issuer.sign(AUDIENCE, { sub: "alice" }));
    await page.click("#token-form button");
    await expect.poll(() => page.locator("#sign-in").isVisible(), POLL).toBe(false);
    await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe("alice");
    await send(page, "hello with a token");
    await expect.poll(() => reply(page).textContent(), POLL).toBe("You said: hello with a token");
    await expect.poll(() => page.locator('.item[data-kind="settled"]').count(), POLL).toBe(1);
    expect(await page.evaluate(() => sessionStorage.getItem("harness-chat:token"))).toMatch(/^ey/);
    const records = await h.runtime.listSubmissions({ agent: "assistant", instance: "alice" });
    expect(records.submissions).toHaveLength(1);
    expect(seen).toContain("alice");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("the Sign in link goes to the sign-in page, whose #access_token signs the tab in; the fragment is cleared and the tab is back on its instance and session", async () => {
    const { page, errors } = await openChat("/#session=linked");
    await expect.poll(() => page.locator("#sign-in").isVisible(), POLL).toBe(true);
    await page.click("#sign-in-link");
    await page.waitForURL((url) => url.origin === h.url && !url.hash.includes("access_token"), POLL);
    expect(page.url()).not.toContain("access_token");
    // Back where the tab was before it left (the sign-in page returns to one fixed address), on
    // the signed-in person's own instance.
    await expect.poll(() => page.url(), POLL).toBe(`${h.url}/?agent=assistant&instance=alice#session=linked`);
    await expect.poll(() => page.evaluate("document.body.dataset.auth"), POLL).toBe("signed-in");
    expect(await page.locator("#sign-in").isVisible()).toBe(false);
    await send(page, "signed in by the link");
    await expect.poll(() => reply(page).textContent(), POLL).toBe("You said: signed in by the link");
    // Reloaded, the tab is still signed in (sessionStorage) and reads the conversation with the token.
    await page.reload();
    await expect.poll(() => reply(page).textContent(), POLL).toBe("You said: signed in by the link");
    expect(await page.locator("#sign-in").isVisible()).toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a token the server refuses asks again; the page's CSP still allows only its own origin", async () => {
    const { page } = await openChat();
    await expect.poll(() => page.locator("#sign-in").isVisible(), POLL).toBe(true);
    await page.fill("#token", "not-a-token");
    await page.click("#token-form button");
    await expect.poll(() => page.locator("#sign-in-why").textContent(), POLL).toBe("The server did not accept your token (it may have expired). Sign in again.");
    expect(await page.locator("#sign-in").isVisible()).toBe(true);
    expect(await page.evaluate(() => sessionStorage.getItem("harness-chat:token"))).toBeNull();
    const res = await fetch(`${h.url}/`);
    expect(res.headers.get("content-security-policy")).toContain("connect-src 'self'");
    // The config the page reads names the sign-in page.
    const config = (await (await fetch(`${h.url}/chat-config.json`)).json()) as { signIn?: { url: string } };
    expect(config.signIn?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth2\/authorize\?/);
    await page.close();
  });
});

describe("mountChatPage signIn", () => {
  it("refuses a sign-in URL that is not http(s), so the page never links to script", () => {
    expect(() => mountChatPage(new Hono(), { agents: ["a"], signIn: { url: "javascript:alert(1)" } })).toThrow(TypeError);
    expect(() => mountChatPage(new Hono(), { agents: ["a"], signIn: { url: "not a url" } })).toThrow("signIn.url must be an http(s) URL");
  });
});
