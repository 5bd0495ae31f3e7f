import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/client.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import type { SubmissionPage } from "../../../src/protocol/submission-view.ts";
import { MARKDOWN_SAMPLE } from "../../../examples/chat/agents.ts";
import { accessibilityViolations, CHROMIUM, expectTidyLayout } from "./browser.ts";
import { freePort, killExamples, ROOT, startExampleProcess, type ExampleProcess } from "./support.ts";

/**
 * `npm run example -- chat` as a process, driven through its page (the one the package serves for
 * `harness dev`) in headless Chromium (Debian's `chromium`, which `.ci/run` installs): send and
 * watch the text stream, markdown rendered and model output unable to run script, steer a run
 * during its slow tool, cancel and compact in plain words, reload, switch sessions, an idle tab
 * that stops reconnecting, the layout at 390 × 844 and at desktop size with no overlap, an
 * accessibility check (axe-core), a kill -9 mid-reply (the banner while the server is gone, the
 * reply shown once after), and a page of another origin refused unless CORS_ORIGINS allows it.
 * Screenshots are kept in test-artifacts/chat/ (gitignored).
 */

if (!CHROMIUM) console.warn("examples/chat browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const RESEARCH_MS = 4_000;
/** How long a page may take to show what is asserted (the machine may be loaded; vitest's default is 1 s). */
const POLL = { timeout: 20_000 };
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const SHOTS = join(ROOT, "test-artifacts", "chat");

let dataDir: string;
let ex: ExampleProcess;
let browser: Browser;
let foreign: Server;
let foreignPort: number;
/** Paths the foreign site was asked for (a markdown image must never reach it). */
const foreignRequests: string[] = [];

/** A page of another origin whose script calls the chat app (`/probe?target=…`). */
function startForeignSite(): Promise<void> {
  foreign = createServer((req, res) => {
    foreignRequests.push(req.url ?? "");
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><title>foreign</title><script type="module">
      const target = new URLSearchParams(location.search).get("target");
      const outcome = async (init) => {
        try { const r = await fetch(target, init); return String(r.status); } catch (e) { return "refused"; }
      };
      window.probe = async (body) => ({
        json: await outcome({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ kind: "user", body }) }),
        simple: await outcome({ method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify({ kind: "user", body: body + " (simple)" }) }),
      });
    </script>`);
  });
  return new Promise((resolve) => foreign.listen(foreignPort, "127.0.0.1", resolve));
}

beforeAll(async () => {
  if (!CHROMIUM) return;
  dataDir = mkdtempSync(join(tmpdir(), "harness-chat-"));
  mkdirSync(SHOTS, { recursive: true });
  foreignPort = await freePort();
  await startForeignSite();
  ex = await startExampleProcess(["run", "example", "--", "chat"], {
    DATA_DIR: dataDir,
    RESEARCH_MS: String(RESEARCH_MS),
    CORS_ORIGINS: `http://127.0.0.1:${foreignPort}`,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  console.log(`examples/chat screenshots: ${SHOTS}`);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await killExamples();
  await new Promise((resolve) => (foreign ? foreign.close(resolve) : resolve(undefined)));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openChat(instance: string, viewport = DESKTOP, url = ex.url): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  page.on("pageerror", (err: Error) => errors.push(err.message));
  await page.goto(`${url}/?instance=${instance}`);
  await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe(instance);
  expect(errors).toEqual([]);
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#message", text);
  await page.click("#send");
}

const settledItems = (page: Page) => page.locator('.item[data-kind="settled"]');
const assistantItems = (page: Page) => page.locator('.item[data-kind="assistant"]');
const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** The session's records, read as any client reads them. */
async function recordsOf(instance: string, url = ex.url): Promise<ConversationRecord[]> {
  const records: ConversationRecord[] = [];
  for await (const record of createClient({ baseUrl: url }).stream("chat", instance)) records.push(record);
  return records;
}

async function listing(instance: string, session = "default"): Promise<SubmissionPage> {
  const res = await fetch(`${ex.url}/agents/chat/${instance}/submissions?session=${session}`);
  return (await res.json()) as SubmissionPage;
}

// Each test drives a page through several replies; on a loaded machine that takes longer than
// vitest's 30 s (the polls inside keep their own bounds).
describe.skipIf(!CHROMIUM)("examples/chat in headless Chromium", { timeout: 90_000 }, () => {
  it("streams a reply as it is written, steers a run during its slow tool, and lists the submissions in plain words", async () => {
    const page = await openChat("browser-1");
    await send(page, "tell me a story about lighthouses and the sea at night");
    // The reply streams: seen unfinished (the cursor) before it is complete.
    const reply = assistantItems(page).first();
    await expect.poll(() => reply.getAttribute("data-done"), POLL).toBe("false");
    const partial = (await reply.textContent()) ?? "";
    expect("Noted: tell me a story about lighthouses and the sea at night".startsWith(partial)).toBe(true);
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    expect(await reply.textContent()).toBe("Noted: tell me a story about lighthouses and the sea at night");
    expect(partial.length).toBeLessThan("Noted: tell me a story about lighthouses and the sea at night".length);
    expect(await settledItems(page).first().textContent()).toMatch(/^Done · \d+ tokens$/);

    // Steer while the research tool runs: the run answers the steer instead of summarizing.
    await send(page, "research the history of tea");
    const tool = page.locator('.item[data-kind="tool"]');
    await expect.poll(() => tool.getAttribute("data-state"), POLL).toBe("running");
    expect(await tool.locator(".tool-status").textContent()).toBe("running…");
    await shot(page, "1-research-running");
    await page.fill("#message", "skip it, focus on coffee prices");
    await page.click("#steer");
    await expect.poll(() => settledItems(page).count(), { timeout: RESEARCH_MS + 15_000 }).toBe(2);
    expect(await page.locator("#error").textContent()).toBe("");
    const texts = await page.locator(".item").allTextContents();
    expect(texts).toContain("steerskip it, focus on coffee prices");
    expect(texts.at(-2)).toBe("Noted: skip it, focus on coffee prices");
    expect(texts.some((t: string) => t.startsWith("Here is what I found"))).toBe(false);
    expect(await tool.getAttribute("data-state")).toBe("done");
    expect(await tool.locator(".tool-status").textContent()).toBe("done");
    await tool.locator("summary").click();
    expect(await tool.locator("pre").last().textContent()).toContain("1. the history of tea is older than it looks");

    // The submissions panel: both settled, newest first (a listing read on the settlement record
    // may still say `terminalizing`; the page reads it again until the row is finalized), in words.
    const rows = page.locator("#submissions tbody tr");
    await expect.poll(() => rows.evaluateAll((trs: { getAttribute(name: string): string | null }[]) => trs.map((r) => r.getAttribute("data-status"))), POLL).toEqual(["settled", "settled"]);
    expect(await rows.evaluateAll((trs: { cells: ArrayLike<{ textContent: string | null }> }[]) => trs.map((r) => r.cells[1]!.textContent))).toEqual(["done", "done"]);

    // Steering with nothing running: a sentence, not an error code.
    await page.fill("#message", "too late");
    await page.click("#steer");
    await expect.poll(() => page.locator("#error").textContent(), POLL).toBe("Nothing is running in this session right now, so there is nothing to steer.");
    const body = (await page.locator("body").textContent()) ?? "";
    expect(body).not.toMatch(/no_run_in_flight|terminalizing|stream reconnecting/);
    await shot(page, "2-steered");
    await page.close();
  });

  it("renders markdown with code blocks, and nothing in a model's reply runs as script or loads from elsewhere", async () => {
    const page = await openChat("browser-md");
    let dialogs = 0;
    page.on("dialog", (d: { dismiss(): Promise<void> }) => {
      dialogs++;
      void d.dismiss();
    });
    await send(page, "show me markdown");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    const md = assistantItems(page).first().locator(".markdown");
    expect(await md.locator("strong").textContent()).toBe("bold");
    expect(await md.locator("em").textContent()).toBe("italic");
    expect(await md.locator("ul > li").count()).toBe(2);
    expect(await md.locator("li code").textContent()).toBe("inline code");
    expect(await md.locator("pre > code").textContent()).toBe(MARKDOWN_SAMPLE.split("```ts\n")[1]!.split("```")[0]);
    const link = md.locator("a");
    expect(await link.getAttribute("href")).toBe("https://example.com/docs");
    expect(await link.getAttribute("target")).toBe("_blank");
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer");

    // The keyless chat model echoes: what the user types comes back as the model's markdown.
    const leak = `http://127.0.0.1:${foreignPort}/leak.png`;
    const payload = [
      `<img src=x onerror="window.__pwned='img'">`,
      `<script>window.__pwned='script'</script>`,
      `<iframe src="${leak}"></iframe>`,
      `[click me](javascript:window.__pwned='link')`,
      `<a href="javascript:window.__pwned='a'">a</a>`,
      `![tracker](${leak})`,
      `<svg onload="window.__pwned='svg'"></svg>`,
    ].join(" ");
    await send(page, payload);
    await expect.poll(() => settledItems(page).count(), POLL).toBe(2);
    const reply = assistantItems(page).last();
    // Raw HTML stays text: the person sees what the model wrote, nothing of it is markup.
    expect(await reply.textContent()).toContain(`<img src=x onerror="window.__pwned='img'">`);
    expect(await reply.textContent()).toContain("<script>window.__pwned='script'</script>");
    const conversation = page.locator("#conversation");
    for (const selector of ["script", "iframe", "svg", "[onerror]", "[onload]", 'a[href^="javascript:"]']) {
      expect(await conversation.locator(selector).count(), selector).toBe(0);
    }
    await page.waitForTimeout(500);
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
    expect(dialogs).toBe(0);
    // A markdown image pointing elsewhere is never fetched (the page's CSP: images from itself only).
    expect(foreignRequests.filter((p) => p.startsWith("/leak"))).toEqual([]);
    await shot(page, "3-markdown-desktop");
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.close();
  });

  it("at 390 × 844 nothing overlaps or is cut off, the submissions panel folds away, and axe finds no violations", async () => {
    const page = await openChat("browser-phone", PHONE);
    await send(page, "show me markdown");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    await send(page, `a long line without spaces: ${"x".repeat(120)}`);
    await expect.poll(() => settledItems(page).count(), POLL).toBe(2);
    // Folded by default on a phone: the conversation has the screen.
    expect(await page.locator("aside").isVisible()).toBe(false);
    expect(await page.locator("#toggle-submissions").getAttribute("aria-expanded")).toBe("false");
    await expectTidyLayout(page, PHONE);
    for (const id of ["#send", "#steer", "#cancel", "#compact"]) expect(await page.locator(id).isVisible(), id).toBe(true);
    await shot(page, "4-phone");
    expect(await accessibilityViolations(page)).toEqual([]);

    // Shown, it shares the height with the conversation instead of covering it.
    await page.click("#toggle-submissions");
    await expect.poll(() => page.locator("aside").isVisible(), POLL).toBe(true);
    await expect.poll(() => page.locator("#submissions tbody tr").count(), POLL).toBe(2);
    await expectTidyLayout(page, PHONE);
    await shot(page, "5-phone-submissions");
    expect(await accessibilityViolations(page)).toEqual([]);
    await page.close();

    const desktop = await openChat("browser-phone", DESKTOP);
    await expect.poll(() => settledItems(desktop).count(), POLL).toBe(2);
    expect(await desktop.locator("aside").isVisible()).toBe(true);
    await expectTidyLayout(desktop, DESKTOP);
    await shot(desktop, "6-desktop");
    await desktop.close();
  });

  it("a first visit and a new session log no error in the browser's console (no 404 for a conversation not started yet); sending still streams", async () => {
    const page = await browser.newPage({ viewport: DESKTOP });
    const consoleErrors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(`${message.text()} ${message.location().url}`);
    });
    const notFound: string[] = [];
    page.on("response", (res) => {
      if (res.status() === 404) notFound.push(res.url());
    });
    await page.goto(`${ex.url}/?instance=browser-console`);
    await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe("browser-console");
    await page.fill("#new-session", "brand-new");
    await page.press("#new-session", "Enter");
    await expect.poll(() => new URL(page.url()).hash, POLL).toBe("#session=brand-new");
    // Both listings answered (the page's word that a session has nothing yet).
    await expect.poll(async () => (await listing("browser-console", "brand-new")).submissions.length, POLL).toBe(0);
    await page.waitForTimeout(1_000);
    expect(notFound).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await send(page, "hello there");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    expect(await assistantItems(page).first().textContent()).toBe("Noted: hello there");
    expect(notFound).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it("restores the conversation on reload, switches sessions with a full replay, and an idle tab stops reconnecting", async () => {
    const page = await openChat("browser-2");
    await send(page, "first words");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    const before = await page.locator(".item").allTextContents();

    await page.reload();
    await expect.poll(() => page.locator(".item").allTextContents(), POLL).toEqual(before);

    // Another session: empty, its own conversation.
    await page.fill("#new-session", "side");
    await page.click('#new-session-form button[type="submit"]');
    await expect.poll(() => page.evaluate("location.hash"), POLL).toBe("#session=side");
    await expect.poll(() => page.locator(".item").count(), POLL).toBe(0);
    await send(page, "hello side");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    expect(await assistantItems(page).textContent()).toBe("Noted: hello side");
    expect((await listing("browser-2", "side")).submissions).toHaveLength(1);

    // Back to default: the whole log replayed; and a reload keeps the chosen session.
    await page.selectOption("#session", "default");
    await expect.poll(() => page.locator(".item").allTextContents(), POLL).toEqual(before);
    await page.selectOption("#session", "side");
    await page.reload();
    await expect.poll(() => assistantItems(page).allTextContents(), POLL).toEqual(["Noted: hello side"]);
    expect(await page.locator("#session").inputValue()).toBe("side");

    // Idle and caught up: the stream answered 204 and the tab stopped asking; no banner for that.
    await expect.poll(() => page.evaluate("document.body.dataset.stream"), POLL).toBe("closed");
    const streamRequests: string[] = [];
    page.on("request", (req: { url(): string }) => {
      if (new URL(req.url()).pathname === "/agents/chat/browser-2") streamRequests.push(req.url());
    });
    await page.waitForTimeout(3_000);
    expect(streamRequests).toEqual([]);
    expect(await page.locator("#banner").isVisible()).toBe(false);
    await shot(page, "7-side-session");
    await page.close();
  });

  it("Cancel stops a run during its slow tool, Compact replaces the history with a summary: both on the page, in words, and in the log", async () => {
    const page = await openChat("browser-4");
    await send(page, "first words");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);

    await send(page, "research volcanoes");
    await expect.poll(() => page.locator('.item[data-kind="tool"]').getAttribute("data-state"), POLL).toBe("running");
    await page.click("#cancel");
    await expect.poll(() => settledItems(page).count(), POLL).toBe(2);
    expect(await page.locator("#error").textContent()).toBe("");
    const cancelled = settledItems(page).last();
    expect(await cancelled.getAttribute("data-status")).toBe("failed");
    expect(await cancelled.getAttribute("data-error-code")).toBe("cancelled");
    expect(await cancelled.textContent()).toMatch(/^Cancelled \(cancelled from the chat page\)( · \d+ tokens)?$/);
    // The research never finished: no summary of its findings.
    expect((await page.locator(".item").allTextContents()).some((t: string) => t.startsWith("Here is what I found"))).toBe(false);
    await shot(page, "8-cancelled");

    await page.click("#compact");
    const note = page.locator('.item[data-kind="note"]');
    await expect.poll(() => note.count(), POLL).toBe(1);
    expect(await note.locator("summary").textContent()).toBe("Conversation compacted: older messages were replaced by a summary");
    await note.locator("summary").click();
    // A summary of the conversation, not the request the harness sent the model for one.
    const summary = (await note.locator(".markdown").textContent()) ?? "";
    expect(summary).toContain("first words");
    expect(summary).not.toMatch(/conversation-to-summarize|Write a summary/);
    await expect.poll(() => settledItems(page).count(), POLL).toBe(3);
    expect(await settledItems(page).last().getAttribute("data-status")).toBe("succeeded");
    await shot(page, "9-compacted");

    // The log agrees: the cancel's settlement and the manual compaction, in the session's order.
    const log = await recordsOf("browser-4");
    const settled = log.filter((r) => r.kind === "submission_settled");
    expect(settled.map((r) => r.kind === "submission_settled" && [r.payload.status, r.payload.errorCode ?? null])).toEqual([
      ["succeeded", null],
      ["failed", "cancelled"],
      ["succeeded", null],
    ]);
    const compaction = log.find((r) => r.kind === "compaction");
    expect(compaction).toMatchObject({ payload: { reason: "manual" }, submissionId: settled[2]!.submissionId });
    const listed = await listing("browser-4");
    expect(listed.submissions.map((s) => s.outcome?.errorCode ?? s.outcome?.status)).toEqual(["succeeded", "cancelled", "succeeded"]);
    // The submissions panel shows each one's outcome in words, and the tokens a reply used.
    const rows = page.locator("#submissions tbody tr");
    await expect.poll(() => rows.count(), POLL).toBe(3);
    const readCells = () => rows.evaluateAll((trs: { cells: ArrayLike<{ textContent: string | null }> }[]) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent ?? "")));
    // The panel follows the listing: a row may still say "finishing" until its next refresh.
    await expect.poll(async () => (await readCells()).map((c) => c[1]), POLL).toEqual(["done", "cancelled", "done"]);
    const cells = await readCells();
    expect(Number(cells[2]![4]!.replace(/,/g, ""))).toBe(listed.submissions[2]!.outcome!.usage!.totalTokens);
    expect(Number(cells[2]![4]!.replace(/,/g, ""))).toBeGreaterThan(0);
    await page.close();
  });

  it("after a kill -9 mid-reply: a banner while the server is gone; after the restart it goes, and the reply shows once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harness-chat-crash-"));
    const port = String(await freePort());
    const env = { DATA_DIR: dir, PORT: port, LEASE_MS: "1000" };
    let crashing = await startExampleProcess(["run", "example", "--", "chat"], env);
    try {
      const page = await openChat("crash", DESKTOP, crashing.url);
      // A long message: its echo streams for several seconds (3 characters every 25 ms).
      const text = `please remember all of this: ${"the quick brown fox jumps over the lazy dog, ".repeat(12)}`.trim();
      await send(page, text);
      const assistant = assistantItems(page);
      await expect.poll(async () => ((await assistant.first().textContent()) ?? "").length, POLL).toBeGreaterThan(40);
      expect(await assistant.first().getAttribute("data-done")).toBe("false");
      expect(await page.locator("#banner").isVisible()).toBe(false);
      process.kill(-crashing.proc.pid!, "SIGKILL");
      await crashing.exited;

      // The server is gone: the page says so, in words, and keeps trying.
      const banner = page.locator("#banner");
      await expect.poll(() => banner.isVisible(), POLL).toBe(true);
      await expect.poll(() => banner.getAttribute("data-state"), POLL).toBe("unreachable");
      expect(await banner.textContent()).toBe(`Can't reach the server at 127.0.0.1:${port}. Is it still running? Trying again every few seconds…`);
      await shot(page, "10-server-gone");

      // Same port and data: the banner goes, the page's EventSource reconnects by itself, and a
      // new attempt streams the reply again.
      crashing = await startExampleProcess(["run", "example", "--", "chat"], env);
      await expect.poll(() => banner.isVisible(), { timeout: 30_000 }).toBe(false);
      await expect.poll(() => settledItems(page).count(), { timeout: 40_000 }).toBe(1);
      expect(await assistant.allTextContents()).toEqual([`Noted: ${text}`]);
      expect(await settledItems(page).first().getAttribute("data-status")).toBe("succeeded");
      await shot(page, "11-recovered");

      // The log holds the killed attempt's text and the new one's (a third when a starved heartbeat
      // lets the short lease lapse on a loaded machine): the page showed the reply once regardless.
      const records = await recordsOf("crash", crashing.url);
      expect(new Set(records.filter((r) => r.kind === "assistant_text_delta").map((r) => r.attemptId)).size).toBeGreaterThanOrEqual(2);
      await page.close();
    } finally {
      process.kill(-crashing.proc.pid!, "SIGKILL");
      await crashing.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("refuses a page of another origin unless CORS_ORIGINS allows it, storing nothing for it", async () => {
    const target = `${ex.url}/agents/chat/browser-3`;
    const allowedPage = await browser.newPage();
    await allowedPage.goto(`http://127.0.0.1:${foreignPort}/?target=${encodeURIComponent(target)}`);
    const allowed = await allowedPage.evaluate('probe("from an allowed origin")');
    expect(allowed).toEqual({ json: "202", simple: "202" });

    // Same site, another origin (localhost ≠ 127.0.0.1): the preflight is refused and so is the
    // request a browser sends without one; the harness runs and stores nothing for either.
    const otherPage = await browser.newPage();
    await otherPage.goto(`http://localhost:${foreignPort}/?target=${encodeURIComponent(target)}`);
    const refused = await otherPage.evaluate('probe("from another origin")');
    expect(refused).toEqual({ json: "refused", simple: "refused" });
    const stored = await listing("browser-3");
    expect(stored.submissions).toHaveLength(2);
    await allowedPage.close();
    await otherPage.close();
  });
});
