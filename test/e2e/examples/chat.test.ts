import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/client.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import type { SubmissionPage } from "../../../src/protocol/submission-view.ts";
import { freePort, killExamples, startExampleProcess, type ExampleProcess } from "./support.ts";

/**
 * `npm run example -- chat` as a process, driven through its page in headless Chromium (Debian's
 * `chromium`, which `.ci/run` installs): send and watch the text stream, steer a run during its
 * slow tool, cancel and compact, reload, switch sessions, an idle tab that stops reconnecting, a
 * kill -9 mid-reply after which the reply shows once, and a page of another origin refused unless
 * CORS_ORIGINS allows it. Screenshots go to a scratch directory.
 */

const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(
  (p): p is string => p !== undefined && p !== "" && existsSync(p),
);
if (!CHROMIUM && process.env.CI) throw new Error("Chromium not found: CI must install it (.ci/run installs Debian's chromium)");
if (!CHROMIUM) console.warn("examples/chat browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const RESEARCH_MS = 4_000;
/** How long a page may take to show what is asserted (the machine may be loaded; vitest's default is 1 s). */
const POLL = { timeout: 20_000 };

let dataDir: string;
let shots: string;
let ex: ExampleProcess;
let browser: Browser;
let foreign: Server;
let foreignPort: number;

/** A page of another origin whose script calls the chat app (`/probe?target=…`). */
function startForeignSite(): Promise<void> {
  foreign = createServer((req, res) => {
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
  shots = mkdtempSync(join(tmpdir(), "harness-chat-shots-"));
  foreignPort = await freePort();
  await startForeignSite();
  ex = await startExampleProcess(["run", "example", "--", "chat"], {
    DATA_DIR: dataDir,
    RESEARCH_MS: String(RESEARCH_MS),
    CORS_ORIGINS: `http://127.0.0.1:${foreignPort}`,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  console.log(`examples/chat screenshots: ${shots}`);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await killExamples();
  await new Promise((resolve) => (foreign ? foreign.close(resolve) : resolve(undefined)));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openChat(instance: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  page.on("pageerror", (err: Error) => errors.push(err.message));
  await page.goto(`${ex.url}/?instance=${instance}`);
  await expect.poll(() => page.locator("#instance").textContent(), POLL).toBe(instance);
  expect(errors).toEqual([]);
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#message", text);
  await page.click("#send");
}

const settledItems = (page: Page) => page.locator('.item[data-kind="settled"]');
const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

/** The session's records, read as any client reads them. */
async function recordsOf(instance: string): Promise<ConversationRecord[]> {
  const records: ConversationRecord[] = [];
  for await (const record of createClient({ baseUrl: ex.url }).stream("chat", instance)) records.push(record);
  return records;
}

async function listing(instance: string, session = "default"): Promise<SubmissionPage> {
  const res = await fetch(`${ex.url}/agents/chat/${instance}/submissions?session=${session}`);
  return (await res.json()) as SubmissionPage;
}

describe.skipIf(!CHROMIUM)("examples/chat in headless Chromium", () => {
  it("streams a reply as it is written, steers a run during its slow tool, and lists the submissions", async () => {
    const page = await openChat("browser-1");
    await send(page, "tell me a story about lighthouses and the sea at night");
    // The reply streams: seen unfinished (the cursor) before it is complete.
    const reply = page.locator('.item[data-kind="assistant"]').first();
    await expect.poll(() => reply.getAttribute("data-done"), POLL).toBe("false");
    const partial = (await reply.textContent()) ?? "";
    expect("Noted: tell me a story about lighthouses and the sea at night".startsWith(partial)).toBe(true);
    await expect.poll(() => settledItems(page).count(), POLL).toBe(1);
    expect(await reply.textContent()).toBe("Noted: tell me a story about lighthouses and the sea at night");
    expect(partial.length).toBeLessThan("Noted: tell me a story about lighthouses and the sea at night".length);

    // Steer while the research tool runs: the run answers the steer instead of summarizing.
    await send(page, "research the history of tea");
    const tool = page.locator('.item[data-kind="tool"]');
    await expect.poll(() => tool.getAttribute("data-state"), POLL).toBe("running");
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
    expect(await tool.textContent()).toContain("1. the history of tea is older than it looks");

    // The submissions panel: both settled, newest first (a listing read on the settlement record
    // may still say `terminalizing`; the page reads it again until the row is finalized).
    const statuses = () => page.locator("#submissions tbody tr").evaluateAll((rows: { getAttribute(name: string): string | null }[]) => rows.map((r) => r.getAttribute("data-status")));
    await expect.poll(statuses, POLL).toEqual(["settled", "settled"]);
    await shot(page, "2-steered");
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
    expect(await page.locator('.item[data-kind="assistant"]').textContent()).toBe("Noted: hello side");
    expect((await listing("browser-2", "side")).submissions).toHaveLength(1);

    // Back to default: the whole log replayed; and a reload keeps the chosen session.
    await page.selectOption("#session", "default");
    await expect.poll(() => page.locator(".item").allTextContents(), POLL).toEqual(before);
    await page.selectOption("#session", "side");
    await page.reload();
    await expect.poll(() => page.locator('.item[data-kind="assistant"]').allTextContents(), POLL).toEqual(["Noted: hello side"]);
    expect(await page.locator("#session").inputValue()).toBe("side");

    // Idle and caught up: the stream answered 204 and the tab stopped asking.
    await expect.poll(() => page.evaluate("document.body.dataset.stream"), POLL).toBe("closed");
    const streamRequests: string[] = [];
    page.on("request", (req: { url(): string }) => {
      if (new URL(req.url()).pathname === "/agents/chat/browser-2") streamRequests.push(req.url());
    });
    await page.waitForTimeout(3_000);
    expect(streamRequests).toEqual([]);
    await shot(page, "3-side-session");
    await page.close();
  });

  it("Cancel stops a run during its slow tool, Compact summarizes the history: both on the page and in the log", async () => {
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
    expect(await cancelled.textContent()).toContain("[cancelled] cancelled: cancelled from the chat page");
    // The research never finished: no summary of its findings.
    expect((await page.locator(".item").allTextContents()).some((t: string) => t.startsWith("Here is what I found"))).toBe(false);
    await shot(page, "4-cancelled");

    await page.click("#compact");
    const note = page.locator('.item[data-kind="note"]');
    await expect.poll(() => note.count(), POLL).toBe(1);
    expect(await note.textContent()).toMatch(/^conversation compacted: \S/);
    await expect.poll(() => settledItems(page).count(), POLL).toBe(3);
    expect(await settledItems(page).last().getAttribute("data-status")).toBe("succeeded");
    await shot(page, "5-compacted");

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
    // The submissions panel shows each one's status and outcome, and the tokens a reply used.
    const rows = page.locator("#submissions tbody tr");
    await expect.poll(() => rows.count(), POLL).toBe(3);
    const cells = await rows.evaluateAll((trs: { cells: ArrayLike<{ textContent: string | null }> }[]) =>
      trs.map((tr) => Array.from(tr.cells, (c) => c.textContent ?? "")),
    );
    expect(cells.map((c) => c.slice(1, 2).concat(c[3]!))).toEqual([
      ["settled", "succeeded"],
      ["settled", "failed [cancelled]"],
      ["settled", "succeeded"],
    ]);
    expect(Number(cells[2]![4])).toBe(listed.submissions[2]!.outcome!.usage!.totalTokens);
    expect(Number(cells[2]![4])).toBeGreaterThan(0);
    await page.close();
  });

  it("after a kill -9 mid-reply and a restart, the page shows the reply once: the abandoned attempt's text is dropped live", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harness-chat-crash-"));
    const port = String(await freePort());
    const env = { DATA_DIR: dir, PORT: port, LEASE_MS: "1000" };
    let crashing = await startExampleProcess(["run", "example", "--", "chat"], env);
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
      page.setDefaultTimeout(20_000);
      await page.goto(`${crashing.url}/?instance=crash`);
      // A long message: its echo streams for several seconds (3 characters every 25 ms).
      const text = `please remember all of this: ${"the quick brown fox jumps over the lazy dog, ".repeat(12)}`.trim();
      await send(page, text);
      const assistant = page.locator('.item[data-kind="assistant"]');
      await expect.poll(async () => ((await assistant.first().textContent()) ?? "").length, POLL).toBeGreaterThan(40);
      expect(await assistant.first().getAttribute("data-done")).toBe("false");
      process.kill(-crashing.proc.pid!, "SIGKILL");
      await crashing.exited;
      await shot(page, "6-killed-mid-reply");

      // Same port and data: the page's EventSource reconnects by itself; a new attempt streams the reply again.
      crashing = await startExampleProcess(["run", "example", "--", "chat"], env);
      await expect.poll(() => settledItems(page).count(), { timeout: 40_000 }).toBe(1);
      expect(await assistant.allTextContents()).toEqual([`Noted: ${text}`]);
      expect(await settledItems(page).first().getAttribute("data-status")).toBe("succeeded");
      await shot(page, "7-recovered");

      // The log holds both attempts' text: the page left the first out.
      const records: ConversationRecord[] = [];
      for await (const record of createClient({ baseUrl: crashing.url }).stream("chat", "crash")) records.push(record);
      expect(new Set(records.filter((r) => r.kind === "assistant_text_delta").map((r) => r.attemptId)).size).toBe(2);
      await page.close();
    } finally {
      process.kill(-crashing.proc.pid!, "SIGKILL");
      await crashing.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });

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
