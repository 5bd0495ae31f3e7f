/**
 * The React app (`fixtures/react-chat-app.ts`) in headless Chromium against `npm start` with a
 * bearer token required (`HARNESS_BEARER_TOKEN`, issue 34): `useConversation({baseUrl, token})`
 * (a new token function every render, under StrictMode) and `HarnessChatTransport({baseUrl,
 * token})` under `useChat` get a reply through the token, preflights and stream included; the same
 * app without the token shows the 401.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killExamples, startExampleProcess, type ExampleProcess } from "./examples/support.ts";
import { serveReactApp, type ReactAppSite } from "./fixtures/react-app-site.ts";

const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(
  (p): p is string => p !== undefined && p !== "" && existsSync(p),
);
if (!CHROMIUM) console.warn("React token browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const POLL = { timeout: 30_000 };
const TOKEN = "react-token-test-0123456789";

let dataDir: string;
let server: ExampleProcess;
let browser: Browser;
let site: ReactAppSite;

beforeAll(async () => {
  if (!CHROMIUM) return;
  site = await serveReactApp();
  dataDir = mkdtempSync(join(tmpdir(), "harness-react-token-"));
  server = await startExampleProcess(["start"], { DATA_DIR: dataDir, CORS_ORIGINS: site.url, HARNESS_BEARER_TOKEN: TOKEN });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await killExamples();
  await site?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openApp(ui: "use-chat" | "conversation", instance: string, token?: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  const errors: string[] = [];
  page.on("pageerror", (err: Error) => errors.push(err.message));
  const query = new URLSearchParams({ ui, instance, api: server.url, ...(token === undefined ? {} : { token }) });
  await page.goto(`${site.url}/?${query}`);
  return { page, errors };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#message", text);
  await page.click("#send");
}

describe.skipIf(!CHROMIUM)("a React app with a token against a server that wants one", { timeout: 120_000 }, () => {
  it("useConversation({baseUrl, token}) reads and sends with the token; without it the error is the 401", async () => {
    const { page, errors } = await openApp("conversation", "react-token", TOKEN);
    await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("idle");
    await send(page, "hello with a token");
    await expect.poll(() => page.locator('li[data-kind="assistant"]').first().textContent(), POLL).toBe("You said: hello with a token");
    await expect.poll(() => page.locator('li[data-kind="settled"]').count(), POLL).toBe(1);
    expect(await page.locator("#error").textContent()).toBe("");
    expect(errors).toEqual([]);
    await page.close();

    const anonymous = await openApp("conversation", "react-token");
    await expect.poll(() => anonymous.page.locator("#status").textContent(), POLL).toBe("error");
    expect(await anonymous.page.locator("#error").textContent()).toMatch(/bearer token/);
    await anonymous.page.close();
  });

  it("useChat over HarnessChatTransport({baseUrl, token}) gets its reply through the token", async () => {
    const { page, errors } = await openApp("use-chat", "react-token-chat", TOKEN);
    await expect.poll(() => page.evaluate('document.body.dataset.ready ?? ""'), POLL).toBe("true");
    await send(page, "what time is it?");
    const reply = page.locator('li[data-role="assistant"]').first();
    await expect.poll(() => reply.locator('.settlement[data-status="succeeded"]').count(), POLL).toBe(1);
    expect(await page.locator("#error").textContent()).toBe("");
    expect(errors).toEqual([]);
    await page.close();
  });
});
