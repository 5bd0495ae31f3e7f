import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM } from "./browser.ts";
import { freePort, ROOT } from "./support.ts";

/**
 * Issue 37 point 2 on the chat page: `harness dev` as a process on an agents module of the user's
 * own whose model is `MODEL=openai-compatible/<model>` at a host that does not resolve (a laptop
 * offline), the page in headless Chromium. The submission's status says the provider cannot be
 * reached and when the next try is, instead of "waiting its turn" (ADR 0053).
 */

if (!CHROMIUM) console.warn("chat page retry browser test SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)");

const MAIN = join(ROOT, "src", "cli", "main.ts");
const SRC = join(ROOT, "src", "index.ts");
const MODELS = join(ROOT, "src", "agent", "models.ts");
const POLL = { timeout: 60_000, interval: 250 };

let dir: string;
let dev: ChildProcess | undefined;
let output = "";
let url: string;
let browser: Browser | undefined;

beforeAll(async () => {
  if (!CHROMIUM) return;
  dir = mkdtempSync(join(tmpdir(), "harness-chat-retry-"));
  writeFileSync(
    join(dir, "agents.ts"),
    `import type { AgentDefinition } from ${JSON.stringify(SRC)};
import { resolveModel } from ${JSON.stringify(MODELS)};
export const agents: Record<string, AgentDefinition> = {
  assistant: { initialize: async ({ env }) => ({ ...(await resolveModel(env("MODEL")!, process.env)) }) },
};
`,
  );
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  dev = spawn(process.execPath, [MAIN, "dev"], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: String(port),
      MODEL: "openai-compatible/llama3.2:3b",
      OPENAI_COMPATIBLE_BASE_URL: "http://no-such-model-host.invalid/v1",
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  dev.stdout!.on("data", (d) => (output += d));
  dev.stderr!.on("data", (d) => (output += d));
  for (const deadline = Date.now() + 60_000; !output.includes("harness dev · "); ) {
    if (dev.exitCode !== null || Date.now() > deadline) throw new Error(`harness dev did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  if (dev && dev.exitCode === null) {
    process.kill(-dev.pid!, "SIGKILL");
    await new Promise((r) => dev!.once("exit", r));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!CHROMIUM)("the chat page with a model provider that cannot be reached", () => {
  it("the submission's status says the provider cannot be reached and when it tries next, not that it waits its turn", { timeout: 120_000 }, async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    const errors: string[] = [];
    page.on("pageerror", (err: Error) => errors.push(err.message));
    await page.goto(`${url}/?agent=assistant&instance=offline`);
    await page.fill("#message", "hello?");
    await page.click("#send");
    const row = page.locator("#submissions tbody tr").first();
    await expect.poll(() => row.getAttribute("data-retry"), POLL).toBe("unreachable");
    const status = (await row.locator("td").nth(1).textContent()) ?? "";
    expect(status, output).toMatch(/^retrying: the model provider cannot be reached · next try \d/);
    expect(status).not.toContain("waiting its turn");
    expect(await row.getAttribute("title")).toMatch(/cannot reach no-such-model-host\.invalid \((ENOTFOUND|EAI_AGAIN)\)/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
