import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM } from "./examples/browser.ts";
import { killExamples, ROOT, startExampleProcess, type ExampleProcess } from "./examples/support.ts";

/**
 * The console (ADR 0054) in headless Chromium, at desktop size and at 390 px, over the examples
 * as processes: the basic example (`npm start`'s) for a run whose server is killed with kill -9
 * mid-reply and finishes on a second attempt after the restart, a failed submission found by the
 * state filter, its retry, and the numbers; the approvals example for the approvals inbox.
 * Screenshots go to test-artifacts/console/ (gitignored); with CONSOLE_SHOTS=1 the guide's five
 * go to docs/guide/console/ instead (`CONSOLE_SHOTS=1 npx vitest run test/e2e/console.test.ts`).
 */

if (!CHROMIUM) console.warn("console browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const POLL = { timeout: 60_000 };
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const SHOTS = join(ROOT, "test-artifacts", "console");
/** The guide's pictures (docs/guide/console.md), written there with CONSOLE_SHOTS=1; kept few and small. */
const GUIDE = join(ROOT, "docs", "guide", "console");
const GUIDE_SHOTS = new Set(["list-failed-desktop", "timeline-desktop", "timeline-phone", "approvals-phone", "numbers-desktop"]);

function shotPath(name: string): string {
  return join(process.env.CONSOLE_SHOTS && GUIDE_SHOTS.has(name) ? GUIDE : SHOTS, `${name}.png`);
}

let dataDir: string;
let browser: Browser;

beforeAll(async () => {
  if (!CHROMIUM) return;
  dataDir = mkdtempSync(join(tmpdir(), "harness-console-"));
  mkdirSync(SHOTS, { recursive: true });
  if (process.env.CONSOLE_SHOTS) mkdirSync(GUIDE, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 90_000);
afterEach(killExamples);
afterAll(async () => {
  await browser?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return (await res.json()) as Record<string, unknown>;
}

async function settled(base: string, id: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await fetch(`${base}/agents/assistant/demo/submissions/${encodeURIComponent(id)}`);
    const body = (await res.json()) as { status?: string };
    if (body.status === "settled") return;
    if (Date.now() > deadline) throw new Error(`${id} did not settle: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function pageAt(viewport: { width: number; height: number }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (err) => console.error("console page error:", err));
  return page;
}

describe.skipIf(!CHROMIUM)("the console", () => {
  it(
    "finds a failed submission, shows the attempt a kill -9 ended and the one that finished, retries the failed one, and counts the runs",
    { timeout: 400_000 },
    async () => {
      const env = { DATA_DIR: join(dataDir, "basic"), LEASE_MS: "1000" };
      let ex: ExampleProcess = await startExampleProcess(["run", "example", "--", "basic"], env);
      const port = new URL(ex.url).port;

      // A failed submission: a result schema the keyless model's text cannot meet, no retries.
      const failed = await post(`${ex.url}/agents/assistant/demo?wait=true`, {
        kind: "user",
        body: "give me a number",
        resultSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
        resultRetries: 0,
      });
      expect(failed.status, JSON.stringify(failed)).toBe("failed");

      // A slow reply in another session, its server killed mid-reply and started again.
      const slow = await post(`${ex.url}/agents/assistant/demo`, { kind: "user", body: "tell me slowly", session: "crash" });
      const slowId = String(slow.submissionId);
      const deadline = Date.now() + 60_000;
      while (!(await (await fetch(`${ex.url}/agents/assistant/demo/submissions/${slowId}`)).text()).includes('"status":"running"')) {
        if (Date.now() > deadline) throw new Error("the slow run never started");
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 1_500)); // some of its reply in the log
      process.kill(ex.pid, "SIGKILL");
      await ex.exited;
      ex = await startExampleProcess(["run", "example", "--", "basic"], { ...env, PORT: port });
      await settled(ex.url, slowId);

      for (const [name, viewport] of [["desktop", DESKTOP], ["phone", PHONE]] as const) {
        const page = await pageAt(viewport);
        // The failed one, found by the state filter.
        await page.goto(`${ex.url}/console#list?state=failed`);
        const failedRow = page.locator(`tr[data-submission="${String(failed.submissionId)}"]`);
        await expect.poll(() => failedRow.count(), POLL).toBe(1);
        expect(await page.locator("tbody tr").count(), "only failed ones").toBe(1);
        await page.screenshot({ path: shotPath(`list-failed-${name}`) });
        await failedRow.locator("a").click();
        await expect.poll(() => page.locator("h2").textContent(), POLL).toBe(`Submission ${String(failed.submissionId)}`);
        await expect.poll(() => page.locator("dl.facts").textContent(), POLL).toContain("result_schema_invalid");

        // The crashed run: two attempts, the first ended without settling, the second settled.
        await page.goto(`${ex.url}/console#sub/assistant/demo/${slowId}`);
        await expect.poll(() => page.locator("[data-attempts]").getAttribute("data-attempts"), POLL).toBe("2");
        const lost = page.locator('ol.events li[data-kind="attempt-lost"]');
        await expect.poll(() => lost.count(), POLL).toBe(1);
        expect(await lost.textContent()).toMatch(/attempt 1 .*ended without settling: crashed or lost its lease; attempt 2 took over/);
        expect(await page.locator('ol.events li[data-kind="attempt"]').textContent()).toMatch(/attempt 2 .*settled: succeeded/);
        expect(await page.locator(".timeline .span.attempt-lost").count(), "drawn on the timeline").toBe(1);
        expect(await page.locator('ol.events li[data-kind="model"]').count(), "a model call per attempt that completed one").toBeGreaterThanOrEqual(1);
        expect(await page.evaluate("document.documentElement.scrollWidth"), "fits the width").toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: shotPath(`timeline-${name}`), fullPage: true });

        // Failures, grouped by reason: the failed one under its code.
        await page.goto(`${ex.url}/console#failures`);
        const group = page.locator("section.group");
        await expect.poll(() => group.count(), POLL).toBe(1);
        expect(await group.locator("h3").textContent()).toMatch(/^result_schema_invalid: .* \(1\)$/);

        // The numbers: the runs of the last hour, per agent.
        await page.goto(`${ex.url}/console#numbers`);
        await expect.poll(() => page.locator('section[aria-label="Last hour"] [data-number="settled"]').textContent(), POLL).toBe("2");
        expect(await page.locator('section[aria-label="Last hour"] tr[data-agent="assistant"]').count()).toBe(1);
        expect(await page.locator('section[aria-label="Last hour"] [data-number="p50"]').textContent()).toMatch(/^\d+\.\d\d s$/);
        await page.screenshot({ path: shotPath(`numbers-${name}`), fullPage: true });
        await page.close();
      }

      // Retry the failed one from its page: a new submission, linked to the old by its id.
      const page = await pageAt(DESKTOP);
      // Calling a tool directly is harness dev's alone: npm start's server refuses it.
      await page.goto(`${ex.url}/console#tools`);
      await page.locator('input[name="agent"]').fill("assistant");
      await page.locator('input[name="tool"]').fill("clock");
      await page.getByRole("button", { name: "Call" }).click();
      await expect.poll(() => page.locator("pre.tool-result").textContent(), POLL).toContain("harness dev only");
      await page.goto(`${ex.url}/console#sub/assistant/demo/${String(failed.submissionId)}`);
      await page.getByRole("button", { name: "Retry" }).click();
      const retryId = `${String(failed.submissionId)}~retry`;
      await expect.poll(() => page.locator("h2").textContent(), POLL).toBe(`Submission ${retryId}`);
      await settled(ex.url, retryId);
      const retried = (await (await fetch(`${ex.url}/agents/assistant/demo/submissions/${encodeURIComponent(retryId)}`)).json()) as { input: { body: string } };
      expect(retried.input.body, "the same input").toBe("give me a number");
      await page.close();
    },
  );

  it("approves a call from the approvals inbox and the run finishes; answers a callback by hand", { timeout: 300_000 }, async () => {
    const ex = await startExampleProcess(["run", "example", "--", "approvals"], { DATA_DIR: join(dataDir, "approvals") });
    const admitted = await post(`${ex.url}/agents/support/alice`, { kind: "user", body: "refund 240 for order A-17" });
    const id = String(admitted.submissionId);
    for (const [name, viewport] of [["phone", PHONE], ["desktop", DESKTOP]] as const) {
      const page = await pageAt(viewport);
      await page.goto(`${ex.url}/console#approvals`);
      const card = page.locator("ul.inbox li");
      if (name === "phone") {
        await expect.poll(() => card.count(), POLL).toBe(1);
        expect(await card.textContent()).toContain("refund");
        expect(await card.textContent()).toContain('"amount": 240');
        expect(await page.evaluate("document.documentElement.scrollWidth"), "fits the width").toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: shotPath(`approvals-${name}`) });
        await card.getByRole("button", { name: "Approve" }).click();
        await expect.poll(() => page.locator("main").textContent(), POLL).toContain("No call waits for a person.");
      }
      // The run finishes: its timeline shows the approval (by whom) and the settlement.
      await page.goto(`${ex.url}/console#sub/support/alice/${id}`);
      await expect.poll(() => page.locator("dl.facts").textContent(), POLL).toContain("succeeded");
      expect(await page.locator('ol.events li[data-kind="attempt-parked"]').textContent()).toMatch(/attempt 1 .*parked to wait for a person's approval \(refund\); attempt 2 resumed it/);
      // The example has no auth: the decision names no principal (with auth on, its principal's id).
      expect(await page.locator('ol.events li[data-kind="wait"]').textContent()).toMatch(/approved \(no principal: auth off\) · waited \d+ ms/);
      await page.screenshot({ path: shotPath(`approved-${name}`), fullPage: true });
      await page.close();
    }

    // A shipping label waits for the warehouse's callback: answered by hand from its page.
    const label = await post(`${ex.url}/agents/support/bob`, { kind: "user", body: "label for order A-17" });
    const page = await pageAt(PHONE);
    await page.goto(`${ex.url}/console#list?state=waiting_callback`);
    const row = page.locator(`tr[data-submission="${String(label.submissionId)}"]`);
    await expect.poll(() => row.count(), POLL).toBe(1);
    await row.locator("a").click();
    const form = page.locator("form.callback");
    await expect.poll(() => form.count(), POLL).toBe(1);
    await form.locator("textarea").fill('{"tracking": "1Z-CONSOLE"}');
    await form.getByRole("button", { name: "Answer", exact: true }).click();
    await expect.poll(() => page.locator("dl.facts").textContent(), POLL).toContain("succeeded");
    expect(await page.locator('ol.events li[data-kind="wait"]').textContent()).toMatch(/callback: .*answered · waited \d+ ms/);
    await page.close();
  });
});
