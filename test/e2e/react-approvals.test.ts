/**
 * Approvals in a React front end (issue 27): the app of `fixtures/react-chat-app.ts` in headless
 * Chromium against `npm run example -- approvals` as a process (its keyless `support` agent calls
 * `refund`, which waits for a person above $100), as a page of another origin. With the AI SDK's
 * `useChat` over `HarnessChatTransport` and with `useConversation`: a waiting refund shows Approve
 * / Deny (and still does after a reload), Approve runs it once and the reply goes on, Deny with a
 * reason runs nothing and shows the reason.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM } from "./examples/browser.ts";
import { killExamples, startExampleProcess, type ExampleProcess } from "./examples/support.ts";
import { serveReactApp, type ReactAppSite } from "./fixtures/react-app-site.ts";

if (!CHROMIUM) console.warn("React approval browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

/** How long a page may take to show what is asserted (the machine may be loaded). */
const POLL = { timeout: 30_000 };

let dataDir: string;
let ex: ExampleProcess;
let browser: Browser;
let site: ReactAppSite;

beforeAll(async () => {
  if (!CHROMIUM) return;
  site = await serveReactApp();
  dataDir = mkdtempSync(join(tmpdir(), "harness-react-approvals-"));
  ex = await startExampleProcess(["run", "example", "--", "approvals"], { DATA_DIR: dataDir, CORS_ORIGINS: site.url });
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
  await page.goto(`${site.url}/?ui=${ui}&agent=support&instance=${instance}&api=${encodeURIComponent(ex.url)}`);
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

/** How many times the example's refund tool ran for `amount` (it logs each payment). */
const paid = (amount: number) => ex.output().split(`refund: $${amount} paid back`).length - 1;

describe.skipIf(!CHROMIUM)("approvals in a React app in Chromium against the approvals example", () => {
  it("useChat: a waiting refund shows Approve / Deny, also after a reload; Approve runs it once, Deny with a reason runs nothing", async () => {
    const { page, errors } = await openApp("use-chat", "react-approvals-chat");
    const replies = page.locator('li[data-role="assistant"]');
    const refundPart = (n: number) => replies.nth(n).locator('.tool[data-tool="refund"]');

    await send(page, "refund 240 for order A-17");
    await expect.poll(() => refundPart(0).getAttribute("data-state"), POLL).toBe("approval-requested");
    expect(await replies.nth(0).locator(".approval").getAttribute("data-state")).toBe("pending");
    // The run waits for a person; the page's stream stays open.
    expect(await page.locator("#status").textContent()).toBe("streaming");
    expect(paid(240)).toBe(0);

    await page.reload();
    await ready(page);
    await expect.poll(() => refundPart(0).getAttribute("data-state"), POLL).toBe("approval-requested");
    await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("streaming");

    await refundPart(0).locator(".approve").click();
    await expect.poll(() => replies.nth(0).locator('.settlement[data-status="succeeded"]').count(), POLL).toBe(1);
    expect(await refundPart(0).getAttribute("data-state")).toBe("output-available");
    expect(await refundPart(0).getAttribute("data-approved")).toBe("true");
    expect(await refundPart(0).textContent()).toBe("refunded $240 for order A-17");
    expect(await replies.nth(0).locator(".approval").getAttribute("data-state")).toBe("approved");
    expect(await replies.nth(0).locator(".text").allTextContents()).not.toEqual([]);
    await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("ready");
    expect(paid(240), "approved: ran once").toBe(1);

    await send(page, "refund 900 for order B-2");
    await expect.poll(() => refundPart(1).getAttribute("data-state"), POLL).toBe("approval-requested");
    await page.fill("#reason", "needs a manager");
    await refundPart(1).locator(".deny").click();
    await expect.poll(() => replies.nth(1).locator(".settlement").count(), POLL).toBe(1);
    expect(await refundPart(1).getAttribute("data-state")).toBe("output-denied");
    expect(await refundPart(1).getAttribute("data-approved")).toBe("false");
    const approval = replies.nth(1).locator(".approval");
    expect([await approval.getAttribute("data-state"), await approval.getAttribute("data-reason")]).toEqual(["denied", "needs a manager"]);
    expect(paid(900), "denied: never ran").toBe(0);
    expect(await page.locator("#error").textContent()).toBe("");
    expect(errors).toEqual([]);
    await page.close();
  }, 180_000);

  it("useConversation: pendingApprovals lists the waiting refund, also after a reload; approve runs it once, deny with a reason runs nothing", async () => {
    const { page, errors } = await openApp("conversation", "react-approvals-conversation");
    const pending = page.locator("#pending li.pending");
    const tools = page.locator('li[data-kind="tool"]');
    await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("idle");
    const before = paid(240);

    await send(page, "refund 240 for order A-17");
    await expect.poll(() => pending.count(), POLL).toBe(1);
    expect(await pending.first().textContent()).toMatch(/^refund \{"amount":240,"order":"A-17"\}/);
    expect(await tools.first().getAttribute("data-approval")).toBe("pending");
    expect(await page.locator("#status").textContent()).toBe("running");

    await page.reload();
    await ready(page);
    await expect.poll(() => pending.count(), POLL).toBe(1);

    await pending.first().locator(".approve").click();
    await expect.poll(() => page.locator('li[data-kind="settled"]').count(), POLL).toBe(1);
    expect(await pending.count()).toBe(0);
    expect(await tools.first().getAttribute("data-approval")).toBe("approved");
    expect(await tools.first().textContent()).toBe("refund: refunded $240 for order A-17");
    await expect.poll(() => page.locator("#status").textContent(), POLL).toBe("idle");
    expect(paid(240) - before, "approved: ran once").toBe(1);

    await send(page, "refund 700 for order C-3");
    await expect.poll(() => pending.count(), POLL).toBe(1);
    await page.fill("#reason", "needs a manager");
    await pending.first().locator(".deny").click();
    await expect.poll(() => page.locator('li[data-kind="settled"]').count(), POLL).toBe(2);
    expect(await pending.count()).toBe(0);
    expect(await tools.nth(1).getAttribute("data-approval")).toBe("denied");
    expect(await tools.nth(1).textContent()).toContain("needs a manager");
    expect(paid(700), "denied: never ran").toBe(0);
    expect(await page.locator("#error").textContent()).toBe("");
    expect(errors).toEqual([]);
    await page.close();
  }, 180_000);
});
