/**
 * The console served by the http function (ADR 0054) on the local cloud (DynamoDB Local, fauxqs
 * SQS + S3), as a deployment with an operator token serves it: in headless Chromium the page asks
 * for the token, lists the run across agents and instances (read through the `byActivity`
 * index) and shows its timeline; anyone but the operator is refused the listing.
 */
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uid } from "../../support/local-cloud-http.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { CHROMIUM } from "../examples/browser.ts";
import { freePort } from "../examples/support.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const OPERATOR_TOKEN = "operator-token-of-the-console-test";
const POLL = { timeout: 60_000 };

// A function URL is https, and the http function takes its own origin to be (hono's Lambda adapter
// builds every request URL as https://): over the local cloud's plain http, the page's own
// requests that carry an Origin (its module scripts, its POSTs) pass as an allowed CORS origin.
let port = 0;
beforeAll(async () => {
  port = await freePort();
});

const suite = useLocalCloud(() => ({
  port,
  agentsModule,
  workers: 1,
  workerTimeoutMs: 20_000,
  streamMaxMs: 3_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "3000" },
  functionEnv: { http: { HARNESS_BEARER_TOKEN: OPERATOR_TOKEN, HARNESS_CORS_ORIGINS: `http://127.0.0.1:${port}` } },
}));

let browser: Browser;
beforeAll(async () => {
  if (CHROMIUM) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
});
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!CHROMIUM)("the console on the local cloud", () => {
  it("is served by the http function, lists a settled run and shows its timeline to the operator", { timeout: 180_000 }, async () => {
    const instance = `console-${uid()}`;
    const res = await fetch(`${suite.cloud.url}/agents/assistant/${instance}?wait=true`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${OPERATOR_TOKEN}` },
      body: JSON.stringify({ kind: "user", body: "hello from the console test" }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const settled = (await res.json()) as { submissionId: string; status: string };
    expect(settled.status).toBe("succeeded");
    expect((await fetch(`${suite.cloud.url}/console/api/activity`)).status, "no token").toBe(401);
    expect((await fetch(`${suite.cloud.url}/console/api/activity`, { headers: { authorization: "Bearer nope" } })).status).toBe(401);

    for (const file of ["console.js", "api.js", "timeline.js", "console.css"]) {
      const res = await fetch(`${suite.cloud.url}/console/${file}`);
      const text = await res.text();
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type"), file).toMatch(file.endsWith(".js") ? /^text\/javascript/ : /^text\/css/);
      expect(text.length, file).toBeGreaterThan(100);
    }
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const problems: string[] = [];
    page.on("console", (m) => problems.push(`console ${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
    page.on("response", (r) => r.status() >= 400 && problems.push(`response: ${r.url()} ${r.status()}`));
    const served = await page.goto(`${suite.cloud.url}/console`);
    expect(served?.status(), "the page").toBe(200);
    expect(served?.headers()["content-type"]).toBe("text/html; charset=utf-8");
    await expect.poll(() => page.locator("main").textContent(), { ...POLL, message: problems.join("\n") }).toContain("The API wants a token");
    await page.locator("#token").fill(OPERATOR_TOKEN);
    await page.getByRole("button", { name: "Use token" }).click();
    const row = page.locator(`tr[data-submission="${settled.submissionId}"]`);
    await expect.poll(() => row.count(), POLL).toBe(1);
    expect(await row.textContent()).toContain("hello from the console test");
    await row.locator("a").click();
    await expect.poll(() => page.locator("dl.facts").textContent(), POLL).toContain("succeeded");
    expect(await page.locator('ol.events li[data-kind="attempt"]').textContent()).toMatch(/attempt 1 .*settled: succeeded/);
    expect(await page.locator('ol.events li[data-kind="model"]').count()).toBeGreaterThanOrEqual(1);
    await page.close();
  });
});
