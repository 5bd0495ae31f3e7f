/**
 * After publication (issue 37 point 1): `npm create resolute-harness@latest my-agents` and
 * `npx resolute-harness init my-agents`, with the two would-be-published tarballs instead of the
 * registry. `npm create x` is `npm exec create-x`: npm installs the package (and its dependency,
 * `resolute-harness` of the same version) and runs its bin in the current folder; `npx <package>`
 * runs a package's only bin. Here `npm exec --package <tarball>` does the same from the tarballs,
 * in an empty folder. Then the created project installs and `npm start` answers. Also:
 * `npm publish --dry-run` of both is clean (no warning but the one about not being logged in) and
 * packs only the intended files.
 *
 * Slow (a build and three installs): in the package project (`npm run test:package`).
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../examples/support.ts";

const execFileAsync = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const createDir = join(repoRoot, "packages/create-resolute-harness");
const MINUTE = 60_000;

function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_(package_|lifecycle_|config_(local_prefix|workspace))|^INIT_CWD$/.test(key)) continue;
    env[key] = value;
  }
  env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
  return env;
}

async function run(cmd: string, args: string[], cwd: string, timeout = 10 * MINUTE): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(cmd, args, { cwd, env: childEnv(), timeout, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string; message?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: `${e.message ?? ""}\n${e.stderr ?? ""}` };
  }
}

/** The dry run's report: npm 11 keys it by the package's name. */
function packed(stdout: string): { files: { path: string }[] } {
  const json = JSON.parse(stdout.slice(stdout.indexOf("{"))) as Record<string, unknown>;
  return ("files" in json ? json : Object.values(json)[0]) as { files: { path: string }[] };
}

/** npm's warnings, but the dry run's "requires you to be logged in" (no registry account here). */
function warnings(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.startsWith("npm warn") && !/requires you to be logged in/.test(l));
}

let work: string;
let harnessTarball: string;
let createTarball: string;
const dryRuns: Record<string, { code: number; stdout: string; stderr: string }> = {};

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "harness-create-"));
  // As `npm publish` runs it (prepack builds dist/), without publishing.
  dryRuns.harness = await run("npm", ["publish", "--dry-run", "--json"], repoRoot);
  dryRuns.create = await run("npm", ["publish", "--dry-run", "--json"], createDir);
  // dist/ is built now: pack without building again.
  for (const [dir, name] of [
    [repoRoot, "harness"],
    [createDir, "create"],
  ] as const) {
    const packed = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], dir);
    expect(packed.code, packed.stderr).toBe(0);
    const file = join(work, (JSON.parse(packed.stdout) as [{ filename: string }])[0].filename);
    if (name === "harness") harnessTarball = file;
    else createTarball = file;
  }
}, 20 * MINUTE);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
}, 5 * MINUTE);

describe("npm publish --dry-run", () => {
  it("resolute-harness: clean, with its bin, provenance and the fields a registry page shows", () => {
    const { code, stdout, stderr } = dryRuns.harness!;
    expect(code, stderr).toBe(0);
    expect(warnings(stderr)).toEqual([]);
    const files = packed(stdout).files.map((f) => f.path);
    expect(files).toContain("bin/harness.js");
    for (const f of files) expect(/^(bin\/harness\.js|dist\/|templates\/init\/|LICENSE$|README\.md$|package\.json$)/.test(f), f).toBe(true);
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as Record<string, any>;
    expect(pkg.bin).toEqual({ harness: "bin/harness.js" });
    expect(pkg.publishConfig).toEqual({ access: "public", provenance: true });
    expect(pkg.repository.url).toMatch(/^git\+https:\/\/github\.com\/.+\.git$/);
    for (const field of ["homepage", "bugs", "license", "description", "keywords", "engines"]) expect(pkg[field], field).toBeDefined();
  });

  it("create-resolute-harness: clean, only its bin, README and LICENSE, at the harness's version", () => {
    const { code, stdout, stderr } = dryRuns.create!;
    expect(code, stderr).toBe(0);
    expect(warnings(stderr)).toEqual([]);
    expect(packed(stdout).files.map((f) => f.path).sort()).toEqual(["LICENSE", "README.md", "index.js", "package.json"]);
    const harness = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as Record<string, any>;
    const create = JSON.parse(readFileSync(join(createDir, "package.json"), "utf8")) as Record<string, any>;
    expect(create.version).toBe(harness.version);
    expect(create.dependencies).toEqual({ "resolute-harness": harness.version });
    expect(create.publishConfig).toEqual({ access: "public", provenance: true });
    expect(create.repository).toEqual({ ...harness.repository, directory: "packages/create-resolute-harness" });
  });
});

/** `npm start` in `cwd` on a free port: the first reply's outcome, then SIGTERM to its group. */
async function startAndAsk(cwd: string): Promise<unknown> {
  const port = await freePort();
  const proc = spawn("npm", ["start"], { cwd, env: { ...childEnv(), PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  try {
    const deadline = Date.now() + 2 * MINUTE;
    while (!out.includes("listening on")) {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not come up:\n${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const res = await fetch(`http://127.0.0.1:${port}/agents/assistant/demo?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: '/roll_dice {"count": 2}' }) });
    return await res.json();
  } finally {
    try {
      process.kill(-proc.pid!, "SIGKILL");
    } catch {
      // gone already
    }
  }
}

describe("from the would-be-published tarballs, as after publication", () => {
  it("npm create resolute-harness my-agents (npm exec of create-resolute-harness): a project that installs and answers on npm start", async () => {
    const empty = join(work, "empty");
    mkdirSync(empty);
    const created = await run("npm", ["exec", "--yes", "--prefer-offline", "--package", createTarball, "--package", harnessTarball, "--", "create-resolute-harness", "my-agents"], empty);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain("Created my-agents: .env.example, .gitignore, README.md, agents.ts, main.ts, package.json, tsconfig.json");
    const project = join(empty, "my-agents");
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(pkg.dependencies).toEqual({ "resolute-harness": "0.1.0" });
    expect(existsSync(join(project, "app.ts"))).toBe(false);
    // resolute-harness@0.1.0 is not on the registry yet: the tarball stands in for it.
    const installed = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", harnessTarball], project);
    expect(installed.code, installed.stderr).toBe(0);
    expect(await startAndAsk(project)).toMatchObject({ status: "succeeded" });
  }, 20 * MINUTE);

  it("npx resolute-harness init my-agents --aws (npx runs the package's only bin): the project with its CDK app", async () => {
    const empty = join(work, "npx");
    mkdirSync(empty);
    const created = await run("npm", ["exec", "--yes", "--prefer-offline", "--package", harnessTarball, "--", "harness", "init", "my-agents", "--aws"], empty);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain("Created my-agents: .env.example, .gitignore, README.md, agents.ts, app.ts, cdk.json, main.ts, package.json, tsconfig.json");
    const bin = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).bin as Record<string, string>;
    expect(Object.keys(bin), "npx resolute-harness runs the only bin").toHaveLength(1);
  }, 10 * MINUTE);
});
