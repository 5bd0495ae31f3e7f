/**
 * `npm run bench -- first-hour`: the figures the first-hour guide quotes, measured as a user gets
 * them. The checkout is packed once (`npm run harness -- init`, which packs it into the project's
 * vendor/), then two projects are installed from npm's cache (`--prefer-offline`): `harness init`
 * and `harness init --aws`. Printed: each one's `npm install` time and installed size (node_modules,
 * bytes on disk), their ratio, and the time to the first reply: `npm start` spawned → its
 * listening line → a keyless reply that calls the project's own tool (`/roll_dice`), and the same
 * for `npx harness dev`. Run only when named (several minutes: a build and two installs).
 */
import { execFile, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_|^INIT_CWD$|^PORT$|^MODEL$/.test(k)) out[k] = v;
  out.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
  return { ...out, ...extra };
}

async function timed<T>(step: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await step();
  return { ms: performance.now() - started, value };
}

/** Bytes on disk under `dir` (du -sk: what the folder takes, not the sum of file lengths). */
async function diskBytes(dir: string): Promise<number> {
  const { stdout } = await run("du", ["-sk", dir]);
  return Number(stdout.split("\t")[0]) * 1024;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Spawns `command` in `cwd`, waits for `ready` in its output, then for a reply to `/roll_dice`: the two times from the spawn. */
async function firstReply(cwd: string, command: string[], ready: RegExp): Promise<{ listeningMs: number; replyMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const proc = spawn(command[0]!, command.slice(1), { cwd, env: env({ PORT: String(port) }), stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  try {
    while (!ready.test(out)) {
      if (proc.exitCode !== null || performance.now() - started > 120_000) throw new Error(`${command.join(" ")} did not come up:\n${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const listeningMs = performance.now() - started;
    const res = await fetch(`http://127.0.0.1:${port}/agents/assistant/bench?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: '/roll_dice {"count": 3}' }) });
    const settled = (await res.json()) as { status: string };
    if (settled.status !== "succeeded") throw new Error(`first reply: ${JSON.stringify(settled)}`);
    return { listeningMs, replyMs: performance.now() - started };
  } finally {
    try {
      process.kill(-proc.pid!, "SIGKILL");
    } catch {
      // gone
    }
  }
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export async function benchFirstHour(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "harness-bench-first-hour-"));
  try {
    const plain = join(work, "plain");
    const init = await timed(() => run("npm", ["run", "--silent", "harness", "--", "init", plain], { cwd: ROOT, env: env(), maxBuffer: 64 << 20 }));
    console.log(`npm run harness -- init (packs the checkout: a build): ${s(init.ms)}`);
    // The --aws project from the same tarball (a second pack would only build again): written by
    // the dist/ the pack just built, then given the tarball.
    const aws = join(work, "aws");
    await run(process.execPath, ["--disable-warning=ExperimentalWarning", join(ROOT, "dist/cli/main.js"), "init", "--aws", aws], { env: env() });
    mkdirSync(join(aws, "vendor"), { recursive: true });
    cpSync(join(plain, "vendor"), join(aws, "vendor"), { recursive: true });
    const rows: { name: string; dir: string; installMs: number; bytes: number }[] = [];
    for (const [name, dir, extra] of [
      ["harness init", plain, []],
      ["harness init --aws", aws, ["./vendor/resolute-harness-0.1.0.tgz"]],
    ] as const) {
      const install = await timed(() => run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...extra], { cwd: dir, env: env(), maxBuffer: 64 << 20 }));
      rows.push({ name, dir, installMs: install.ms, bytes: await diskBytes(join(dir, "node_modules")) });
    }
    for (const row of rows) console.log(`${row.name.padEnd(20)} npm install ${s(row.installMs).padStart(7)}   node_modules ${mb(row.bytes).padStart(7)}`);
    console.log(`--aws / without: ${(rows[1]!.bytes / rows[0]!.bytes).toFixed(2)}× the size (measured side by side in this run)`);
    const start = await firstReply(plain, ["npm", "start"], /listening on http/);
    console.log(`npm start: listening ${s(start.listeningMs)}, first reply (your tool, keyless) ${s(start.replyMs)} after the spawn`);
    const dev = await firstReply(plain, ["npx", "harness", "dev"], /harness dev · http/);
    console.log(`npx harness dev: listening ${s(dev.listeningMs)}, first reply ${s(dev.replyMs)} after the spawn`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
