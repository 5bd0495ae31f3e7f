import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accessibilityViolations, CHROMIUM, expectTidyLayout } from "./browser.ts";
import { killExamples, ROOT, startExampleProcess, type ExampleProcess } from "./support.ts";

/**
 * The chat page's approval card (issue 22), in headless Chromium over `npm run example --
 * approvals` as a process: a refund above $100 shows as a card with its arguments and Approve /
 * Deny; Approve runs the refund once and its reply arrives; Deny (with a reason) shows the denial
 * and nothing runs; another tab and a reload show the same state (the card is drawn from the
 * records); a decision that lost to another one is refused in plain words; axe finds nothing.
 * Screenshots in test-artifacts/approvals/ (gitignored).
 */

if (!CHROMIUM) console.warn("approval card browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const POLL = { timeout: 20_000 };
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const SHOTS = join(ROOT, "test-artifacts", "approvals");

let dataDir: string;
let ex: ExampleProcess;
let browser: Browser;

beforeAll(async () => {
  if (!CHROMIUM) return;
  dataDir = mkdtempSync(join(tmpdir(), "harness-approvals-page-"));
  mkdirSync(SHOTS, { recursive: true });
  ex = await startExampleProcess(["run", "example", "--", "approvals"], { DATA_DIR: dataDir });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await killExamples();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openChat(instance: string, viewport = DESKTOP): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  page.on("pageerror", (err: Error) => errors.push(err.message));
  await page.goto(`${ex.url}/?instance=${instance}`);
  await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe(instance);
  return { page, errors };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#message", text);
  await page.click("#send");
}

const settledItems = (page: Page) => page.locator('.item[data-kind="settled"]');
const assistantTexts = (page: Page) => page.locator('.item[data-kind="assistant"]').allTextContents();
const cards = (page: Page) => page.locator('.item[data-kind="tool"][data-approval]');
const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const paidBack = (amount: number) => ex.output().split(`refund: $${amount} paid back`).length - 1;

describe.skipIf(!CHROMIUM)("the chat page's approval card (examples/approvals in headless Chromium)", { timeout: 90_000 }, () => {
  it("shows a waiting call as a card; Approve runs it once and the reply arrives; another tab and a reload show the same", async () => {
    const { page, errors } = await openChat("card-approve");
    await send(page, "refund 240 for order A-17");
    const card = cards(page).first();
    await expect.poll(() => card.getAttribute("data-approval"), POLL).toBe("pending");
    expect(await card.locator(".tool-name").textContent()).toBe("refund");
    expect(JSON.parse((await card.locator("pre").textContent()) ?? "")).toEqual({ amount: 240, order: "A-17" });
    expect(await card.locator(".tool-status").textContent()).toMatch(/^waits for your approval \(until .+\)$/);
    expect(paidBack(240), "nothing ran before the decision").toBe(0);
    // The listing says what the submission waits for, in words.
    await expect.poll(() => page.locator("#submissions tbody tr").first().locator("td").nth(1).textContent(), POLL).toBe("waiting for approval");
    await expectTidyLayout(page, DESKTOP);
    expect(await accessibilityViolations(page)).toEqual([]);
    await shot(page, "1-pending");

    // Another tab on the same session: the same card, drawn from the records.
    const other = await openChat("card-approve");
    await expect.poll(() => cards(other.page).first().getAttribute("data-approval"), POLL).toBe("pending");
    // Parked and caught up: the server ended its stream (the tab does not poll).
    await expect.poll(() => other.page.evaluate("document.body.dataset.stream"), POLL).toBe("closed");

    await card.locator('input[name="reason"]').fill("the parcel arrived broken");
    await card.getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => card.getAttribute("data-approval"), POLL).toBe("approved");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    expect(await settledItems(page).first().getAttribute("data-status")).toBe("succeeded");
    expect(await assistantTexts(page)).toEqual(["refunded $240 for order A-17"]);
    expect(await card.locator(".tool-status").textContent()).toBe("approved: the parcel arrived broken · done");
    expect(await card.getByRole("button").count(), "no buttons once decided").toBe(0);
    expect(await page.locator("#error").textContent()).toBe("");
    expect(paidBack(240), "the approved refund ran once").toBe(1);
    await shot(page, "2-approved");

    // The other tab catches up when it is looked at again (its stream ended when the run parked),
    // and after a reload: the same state.
    await other.page.evaluate('document.dispatchEvent(new Event("visibilitychange"))');
    await expect.poll(() => cards(other.page).first().getAttribute("data-approval"), POLL).toBe("approved");
    await other.page.reload();
    await expect.poll(() => cards(other.page).first().getAttribute("data-approval"), POLL).toBe("approved");
    expect(await cards(other.page).first().locator(".tool-status").textContent()).toBe("approved: the parcel arrived broken · done");
    expect(await assistantTexts(other.page)).toEqual(["refunded $240 for order A-17"]);
    expect([...errors, ...other.errors]).toEqual([]);
    await other.page.close();
    await page.close();
  });

  it("Deny with a reason shows the denial and runs nothing; a decision that lost to another is refused in plain words; tidy and accessible on a phone", async () => {
    const { page, errors } = await openChat("card-deny", PHONE);
    await send(page, "refund 900 for order B-2");
    const card = cards(page).first();
    await expect.poll(() => card.getAttribute("data-approval"), POLL).toBe("pending");
    await expectTidyLayout(page, PHONE);
    expect(await accessibilityViolations(page)).toEqual([]);
    await shot(page, "3-pending-phone");
    // The tool's name stays whole on a phone: the status wraps below it (issue 37: "refun/d").
    const nameLines = () =>
      card.locator(".tool-name").evaluate((el: unknown) => {
        // The text's line boxes: one per line it takes (the repository type-checks without the DOM's types).
        type Range = { selectNodeContents(node: unknown): void; getClientRects(): ArrayLike<{ top: number }> };
        const range = (globalThis as unknown as { document: { createRange(): Range } }).document.createRange();
        range.selectNodeContents(el);
        return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
      });
    expect(await card.locator(".tool-name").textContent()).toBe("refund");
    expect(await nameLines()).toBe(1);

    await card.locator('input[name="reason"]').fill("needs a manager");
    await card.getByRole("button", { name: "Deny" }).click();
    await expect.poll(() => card.getAttribute("data-approval"), POLL).toBe("denied");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    expect(await card.locator(".tool-status").textContent()).toBe("denied: needs a manager");
    expect(await nameLines()).toBe(1);
    expect(await assistantTexts(page)).toEqual(["denied by a reviewer: needs a manager"]);
    expect(paidBack(900), "the denied refund never ran").toBe(0);
    expect(await accessibilityViolations(page)).toEqual([]);
    await shot(page, "4-denied-phone");

    // Someone else decides first (the CLI, another tab): this tab's Approve reaches the server
    // after that decision and is refused; the page says so in words and shows the standing one.
    await send(page, "refund 500 for order B-3");
    const second = cards(page).nth(1);
    await expect.poll(() => second.getAttribute("data-approval"), POLL).toBe("pending");
    await page.route("**/approvals/*", async (route) => {
      const url = new URL(route.request().url());
      await fetch(`${ex.url}${url.pathname}`, { method: "POST", body: JSON.stringify({ approved: false, reason: "decided in the CLI" }) });
      await route.continue();
    });
    await second.getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => page.locator("#error").textContent(), POLL).toBe("Someone already decided this call the other way; the card shows their decision.");
    await expect.poll(() => second.getAttribute("data-approval"), POLL).toBe("denied");
    expect(await second.locator(".tool-status").textContent()).toBe("denied: decided in the CLI");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(2);
    expect(paidBack(500)).toBe(0);
    expect((await page.locator("body").textContent()) ?? "").not.toMatch(/already_decided/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
