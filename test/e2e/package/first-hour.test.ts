/**
 * The new user (issue 37's acceptance): docs/guide/first-hour.md followed as written, from a fresh
 * clone, as processes, with no network beyond loopback. Its commands are read from the guide: the
 * first section's block (clone, `npm ci`, `npm run harness -- init ../my-agents`, install,
 * `npx harness dev`), the section 2 `--cors` line, the section 3 `harness send` of your own tool.
 * Then an edit of agents.ts and the reload it brings, and a React app of another origin in
 * headless Chromium sending a message through the AI SDK's `useChat` against `harness dev --cors`.
 *
 * What differs from a user's terminal, and why: the clone is of this repository's HEAD (`git
 * clone <this checkout>`, not the GitHub URL); npm reads its cache (`npm ci --offline`: the
 * repository's own `npm ci` put every tarball there; the project's `npm install --offline`, or,
 * when the cache lacks some package's metadata, `--prefer-offline`, which says so on stderr); the
 * server listens on a free port (PORT, HARNESS_URL) instead of 8484; the front end's origin is the
 * test site's instead of http://localhost:5173.
 *
 * Slow (a clone's install, a build, a project's install: about 5 to 10 minutes on a loaded 2-core
 * machine): in the package project (`npm run test:package`, which CI runs).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../examples/support.ts";
import { serveReactApp, type ReactAppSite } from "../fixtures/react-app-site.ts";

const execFileAsync = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const MINUTE = 60_000;
const POLL = { timeout: 2 * MINUTE, interval: 500 };
const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(
  (p): p is string => p !== undefined && p !== "" && existsSync(p),
);
if (!CHROMIUM && process.env.CI) throw new Error("Chromium not found: CI must install it");

/** The guide's bash blocks, section by section (`## N.` heading → its command lines, comments dropped). */
function guideCommands(): Map<string, string[]> {
  const text = readFileSync(join(repoRoot, "docs/guide/first-hour.md"), "utf8");
  const sections = new Map<string, string[]>();
  let section = "";
  let inBash = false;
  for (const line of text.split("\n")) {
    const heading = /^## (\d+)\./.exec(line);
    if (heading) section = heading[1]!;
    if (line === "```bash") inBash = true;
    else if (line.startsWith("```")) inBash = false;
    else if (inBash) {
      const command = line.replace(/\s+#.*$/, "").trim();
      if (command !== "") sections.set(section, [...(sections.get(section) ?? []), command]);
    }
  }
  return sections;
}

function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_|^INIT_CWD$|^HARNESS_|^PORT$|^MODEL$/.test(key)) continue;
    env[key] = value;
  }
  // A user's terminal: Node 22 on PATH (this machine's system Node may be older).
  env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
  return { ...env, ...extra };
}

interface Run {
  code: number;
  stdout: string;
  output: string;
}

async function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}, timeout = 15 * MINUTE): Promise<Run> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, { cwd, env: childEnv(env), timeout, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string; message?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", output: `${e.message ?? ""}\n${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/** A shell-free split of a guide line: words, and '…' quoted words. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

interface Dev {
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function startDev(args: string[], cwd: string, env: Record<string, string>): Dev {
  const proc = spawn(args[0]!, args.slice(1), { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<void>((resolve) => proc.on("exit", () => resolve()));
  return {
    proc,
    output: () => out,
    stop: async () => {
      try {
        process.kill(-proc.pid!, "SIGINT");
      } catch {
        return;
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      try {
        process.kill(-proc.pid!, "SIGKILL");
      } catch {
        // gone
      }
    },
  };
}

const guide = guideCommands();
let work: string;
let clone: string;
let project: string;
const timings: Record<string, number> = {};
const devs: Dev[] = [];
let browser: Browser | undefined;
let site: ReactAppSite | undefined;

async function timed<T>(label: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await step();
  } finally {
    timings[label] = Date.now() - started;
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "harness-first-hour-"));
}, MINUTE);

afterAll(async () => {
  for (const dev of devs) await dev.stop();
  await browser?.close();
  await site?.close();
  process.stderr.write(`first-hour timings (ms): ${JSON.stringify(timings)}\n`);
  if (work) rmSync(work, { recursive: true, force: true });
}, 10 * MINUTE);

describe("the first hour, from a fresh clone, as the guide says", () => {
  it("section 1: clone, npm ci, npm run harness -- init ../my-agents (the clone packed into the project), npm install", async () => {
    const steps = guide.get("1")!;
    expect(steps).toEqual([
      "git clone https://github.com/dev-resolute/resolute-harness.git",
      "cd resolute-harness",
      "npm ci",
      "npm run harness -- init ../my-agents",
      "cd ../my-agents",
      "npm install",
      "npx harness dev",
    ]);
    let cwd = work;
    for (const step of steps.slice(0, -1)) {
      const [tool, ...args] = words(step);
      if (tool === "cd") {
        cwd = resolve(cwd, args[0]!);
        continue;
      }
      if (tool === "git") {
        // This checkout's HEAD stands in for the GitHub URL (the test's subject is this commit).
        const head = (await run("git", ["rev-parse", "HEAD"], repoRoot)).stdout.trim();
        const cloned = await timed("git clone", () => run("git", ["clone", "--quiet", "--no-checkout", repoRoot, join(cwd, "resolute-harness")], cwd));
        expect(cloned.code, cloned.output).toBe(0);
        clone = join(cwd, "resolute-harness");
        const checkout = await run("git", ["checkout", "--quiet", "--detach", head], clone);
        expect(checkout.code, checkout.output).toBe(0);
        continue;
      }
      expect(tool).toBe("npm");
      if (args[0] === "ci") {
        const ci = await timed(step, () => run("npm", ["ci", "--offline", "--no-audit", "--no-fund"], cwd));
        expect(ci.code, ci.output).toBe(0);
        continue;
      }
      if (args[0] === "install") {
        project = cwd;
        let installed = await timed(step, () => run("npm", ["install", "--offline", "--no-audit", "--no-fund"], cwd));
        if (installed.code !== 0 && /ENOTCACHED/.test(installed.output)) {
          process.stderr.write("first-hour: npm's cache lacks some metadata; npm install --prefer-offline asks the registry for it\n");
          installed = await timed(`${step} (prefer-offline)`, () => run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], cwd));
        }
        expect(installed.code, installed.output).toBe(0);
        continue;
      }
      const result = await timed(step, () => run("npm", args, cwd));
      expect(result.code, result.output).toBe(0);
      expect(result.stdout).toContain(`Created ${join(work, "my-agents")}: .env.example, .gitignore, README.md, agents.ts, main.ts, package.json, tsconfig.json, vendor/resolute-harness-0.1.0.tgz`);
    }
    expect(project).toBe(join(work, "my-agents"));
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(pkg.dependencies).toEqual({ "resolute-harness": "file:vendor/resolute-harness-0.1.0.tgz" });
    // The installed harness is the clone's: its dist, built by the pack, not a link to the clone.
    expect(existsSync(join(project, "node_modules/resolute-harness/dist/index.js"))).toBe(true);
    expect(existsSync(join(project, "node_modules/aws-cdk-lib"))).toBe(false);
  }, 40 * MINUTE);

  it("npx harness dev; your own tool, keyless, from the CLI (section 3); an edit of agents.ts reloads it", async () => {
    expect(project, "section 1 ran").toBeDefined();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const dev = startDev(words(guide.get("1")!.at(-1)!), project, { PORT: String(port) });
    devs.push(dev);
    await timed("npx harness dev: ready", () => expect.poll(() => dev.output(), POLL).toContain(`harness dev · ${url}`));

    const sendLine = guide.get("3")!.find((l) => l.startsWith("npx harness send") && l.includes("/roll_dice"))!;
    expect(sendLine).toBe(`npx harness send assistant/demo '/roll_dice {"count": 3}' --wait`);
    const sent = await timed("first reply (harness send, your tool)", () => run("npx", words(sendLine).slice(1), project, { HARNESS_URL: url }));
    expect(sent.code, sent.output).toBe(0);
    expect(sent.stdout).toMatch(/`roll_dice` returned: [1-6] \+ [1-6] \+ [1-6] = \d+/);

    // An edit: the tool's answer changes without a restart by hand.
    const agents = readFileSync(join(project, "agents.ts"), "utf8");
    const edited = agents.replace('`${rolls.join(" + ")} = ${', '`${rolls.join(" + ")} makes ${');
    expect(edited).not.toBe(agents);
    writeFileSync(join(project, "agents.ts"), edited);
    await timed("edit to new behaviour", () =>
      expect
        .poll(async () => (await run("npx", words(sendLine).slice(1), project, { HARNESS_URL: url }, MINUTE)).stdout, POLL)
        .toMatch(/`roll_dice` returned: [1-6] \+ [1-6] \+ [1-6] makes \d+/),
    );
    await dev.stop();
  }, 15 * MINUTE);

  it.skipIf(!CHROMIUM)("a React app of another origin sends a message through useChat against harness dev --cors (section 2)", async () => {
    expect(project, "section 1 ran").toBeDefined();
    site = await serveReactApp();
    const corsLine = guide.get("2")?.find((l) => l.includes("--cors"));
    expect(corsLine).toBe("npx harness dev --cors http://localhost:5173");
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const dev = startDev(words(corsLine!.replace("http://localhost:5173", site.url)), project, { PORT: String(port) });
    devs.push(dev);
    await expect.poll(() => dev.output(), POLL).toContain(`harness dev · ${url}`);

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err: Error) => errors.push(err.message));
    await page.goto(`${site.url}/?ui=use-chat&instance=first-hour&api=${encodeURIComponent(url)}`);
    await expect.poll(() => page.evaluate('(document.body.dataset.ready ?? "") + (document.body.dataset.error ?? "")'), POLL).toBe("true");
    await page.fill("#message", '/roll_dice {"count": 2}');
    await page.click("#send");
    const reply = page.locator('li[data-role="assistant"]').first();
    await expect.poll(() => reply.locator('.settlement[data-status="succeeded"]').count(), POLL).toBe(1);
    expect(await reply.locator('.tool[data-tool="roll_dice"]').getAttribute("data-state")).toBe("output-available");
    expect((await reply.locator(".text").allTextContents()).join("")).toMatch(/`roll_dice` returned: [1-6] \+ [1-6] makes \d+/);
    expect(errors).toEqual([]);
    await dev.stop();
  }, 10 * MINUTE);
});
