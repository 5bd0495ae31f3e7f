/**
 * A small React app (`fixtures/react-chat-app.ts`, bundled here with the repository's esbuild)
 * in headless Chromium against `npm start`'s server, as a front end of another origin would use
 * it: the AI SDK's `useChat` over `HarnessChatTransport`, and `useConversation`. For each: a
 * reply streams (a tool call too), a reload mid-reply resumes it with no text twice, and stop
 * cancels the submission. React runs in development under StrictMode (effects twice).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type HarnessClient } from "../../src/client/index.ts";
import { killExamples, startExampleProcess, type ExampleProcess } from "./examples/support.ts";
import { serveReactApp, type ReactAppSite } from "./fixtures/react-app-site.ts";

const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(
  (p): p is string => p !== undefined && p !== "" && existsSync(p),
);
if (!CHROMIUM && process.env.CI) throw new Error("Chromium not found: CI must install it (.ci/run installs Debian's chromium)");
if (!CHROMIUM) console.warn("React chat browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

/** How long a page may take to show what is asserted (the machine may be loaded). */
const POLL = { timeout: 30_000 };
/** The quickstart's keyless model streams a message with "slow" in it at a character every 250 ms. */
const SLOW = "slow reload of the page";
const SLOW_REPLY = `You said: ${SLOW}`;

let dataDir: string;
let server: ExampleProcess;
let browser: Browser;
let site: ReactAppSite;
let siteUrl: string;
let client: HarnessClient;

beforeAll(async () => {
  if (!CHROMIUM) return;
  site = await serveReactApp();
  siteUrl = site.url;
  dataDir = mkdtempSync(join(tmpdir(), "harness-react-chat-"));
  server = await startExampleProcess(["start"], { DATA_DIR: dataDir, CORS_ORIGINS: siteUrl });
  client = createClient({ baseUrl: server.url });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await killExamples();
  await site?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openApp(ui: "use-chat" | "conversation", instance: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);
  const errors: string[] = [];
  page.on("pageerror", (err: Error) => errors.push(err.message));
  await page.goto(`${siteUrl}/?ui=${ui}&instance=${instance}&api=${encodeURIComponent(server.url)}`);
  await ready(page);
  return { page, errors };
}

async function ready(page: Page): Promise<void> {
  await expect.poll(() => page.evaluate('(document.body.dataset.ready ?? "") + (document.body.dataset.error ?? "")'), POLL).toBe("true");
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#message", text);
  await page.click("#send");
}

describe.skipIf(!CHROMIUM)("a React app in Chromium against npm start's server", () => {
  describe("useChat with HarnessChatTransport", () => {
    const replies = (page: Page) => page.locator('li[data-role="assistant"]');
    const replyText = (page: Page, n: number) => replies(page).nth(n).locator(".text").allTextContents().then((t: string[]) => t.join(""));

    it("a reply streams, with a tool call; a reload mid-reply resumes it with no text twice; stop cancels", async () => {
      const instance = "react-use-chat";
      const { page, errors } = await openApp("use-chat", instance);

      await send(page, "what time is it?");
      await expect.poll(() => replies(page).first().locator('.settlement[data-status="succeeded"]').count(), POLL).toBe(1);
      const tool = replies(page).first().locator('.tool[data-tool="clock"]');
      expect(await tool.getAttribute("data-state")).toBe("output-available");
      const time = (await tool.textContent()) ?? "";
      expect(await replyText(page, 0)).toBe(`The time is ${time}.`);

      // A slow reply: seen unfinished, then the page reloads in the middle of it.
      await send(page, SLOW);
      await expect.poll(async () => (await replyText(page, 1)).length, POLL).toBeGreaterThanOrEqual(12);
      const before = await replyText(page, 1);
      expect(SLOW_REPLY.startsWith(before)).toBe(true);
      expect(before.length).toBeLessThan(SLOW_REPLY.length);
      await page.reload();
      await ready(page);
      // The history came back, and the reply goes on streaming (a resumed stream), from where it is.
      await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("streaming");
      expect(await page.locator('li[data-role="user"]').allTextContents()).toEqual(["what time is it?", SLOW]);
      await expect.poll(() => replies(page).nth(1).locator(".settlement").count(), POLL).toBe(1);
      expect(await replyText(page, 1)).toBe(SLOW_REPLY);
      expect(await replies(page).count()).toBe(2);
      expect(await page.locator("#status").textContent()).toBe("ready");

      // Stop: the submission is cancelled, the partial reply stays.
      await send(page, "slow, then stopped");
      await expect.poll(async () => (await replyText(page, 2)).length, POLL).toBeGreaterThanOrEqual(12);
      await page.click("#stop");
      const submissionId = (await page.locator('li[data-role="user"]').nth(2).getAttribute("data-id"))!;
      const outcome = await client.waitForSettled("assistant", instance, submissionId, { signal: AbortSignal.timeout(30_000) });
      expect(outcome).toMatchObject({ status: "failed", errorCode: "cancelled", error: "cancelled: stopped by the user" });
      await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("ready");
      expect((await replyText(page, 2)).length).toBeLessThan("You said: slow, then stopped".length);
      expect(await page.locator("#error").textContent()).toBe("");
      expect(errors).toEqual([]);
      await page.close();
    }, 180_000);
  });

  describe("useConversation", () => {
    const items = (page: Page, kind: string) => page.locator(`li[data-kind="${kind}"]`);

    it("a reply streams, with a tool call; a reload mid-reply resumes it with no text twice; cancel stops it", async () => {
      const instance = "react-conversation";
      const { page, errors } = await openApp("conversation", instance);
      await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("idle");

      await send(page, "what time is it?");
      await expect.poll(() => items(page, "settled").count(), POLL).toBe(1);
      expect(await items(page, "tool").first().textContent()).toMatch(/^clock: \d{4}-/);
      expect(await items(page, "assistant").first().textContent()).toMatch(/^The time is /);

      await send(page, SLOW);
      await expect.poll(async () => ((await items(page, "assistant").nth(1).textContent()) ?? "").length, POLL).toBeGreaterThanOrEqual(12);
      expect(await items(page, "assistant").nth(1).getAttribute("data-done")).toBe("false");
      await page.reload();
      await ready(page);
      await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("running");
      await expect.poll(() => items(page, "settled").count(), POLL).toBe(2);
      expect(await items(page, "assistant").allTextContents()).toEqual([expect.stringMatching(/^The time is /), SLOW_REPLY]);
      expect(await items(page, "user").allTextContents()).toEqual(["what time is it?", SLOW]);
      await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("idle");

      await send(page, "slow, then cancelled");
      await expect.poll(async () => ((await items(page, "assistant").nth(2).textContent()) ?? "").length, POLL).toBeGreaterThanOrEqual(12);
      await page.click("#stop");
      await expect.poll(() => items(page, "settled").nth(2).getAttribute("data-error-code"), POLL).toBe("cancelled");
      expect(((await items(page, "assistant").nth(2).textContent()) ?? "").length).toBeLessThan("You said: slow, then cancelled".length);
      await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("idle");
      expect(await page.locator("#error").textContent()).toBe("");
      expect(errors).toEqual([]);
      await page.close();
    }, 180_000);
  });
});
