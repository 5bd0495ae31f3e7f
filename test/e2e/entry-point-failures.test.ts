import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, ROOT } from "./examples/support.ts";

/**
 * Every entry point a user starts from this repository, on a port another process holds: one line
 * naming the port and `PORT=`, exit 1, no stack trace (issue 26). `dev:aws` says it before it
 * starts its emulators. And `load:multitenant` against no server names the URL it tried and how
 * to point it elsewhere.
 */

let holder: Server;
let busyPort: number;

beforeAll(async () => {
  busyPort = await freePort();
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(busyPort, "127.0.0.1", resolve));
});

afterAll(async () => {
  await new Promise((resolve) => holder.close(resolve));
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm <args>`, or (`node: true`) the node command the npm script runs, which saves npm's own start. */
function npm(args: string[], env: Record<string, string>, node = false): Promise<Exit> {
  return new Promise((resolve) => {
    const [cmd, argv] = node ? [process.execPath, ["--disable-warning=ExperimentalWarning", "examples/run.ts", args.at(-1)!]] : ["npm", args];
    const proc = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, MODEL: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (d) => (stdout += d));
    proc.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Our lines on stderr (npm adds its own `npm error …` lines after a failed script). */
const ownLines = (stderr: string) => stderr.split("\n").filter((l) => l !== "" && !l.startsWith("npm error") && !l.startsWith("npm ERR!"));

const examples = readdirSync(join(ROOT, "examples"), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(ROOT, "examples", d.name, "main.ts")))
  .map((d) => d.name);

// `npm run example -- <name>` runs `node examples/run.ts <name>`: one example goes through npm,
// the others straight to the node command the script runs.
const entryPoints: { name: string; args: string[]; prefix: string; node?: boolean }[] = [
  { name: "npm start", args: ["start"], prefix: "basic example" },
  ...examples.map((name) => ({ name: `npm run example -- ${name}`, args: ["run", "example", "--", name], prefix: `${name} example`, node: name !== "chat" })),
  { name: "npm run dev:aws", args: ["run", "dev:aws"], prefix: "dev:aws" },
];

// Each is a process that fails at once: they run side by side (vitest's maxConcurrency).
describe.concurrent("a port in use", () => {
  it.each(entryPoints)("$name: one line naming the port and PORT=, exit 1", async ({ args, prefix, node }) => {
    const dataDir = mkdtempSync(join(tmpdir(), "harness-port-in-use-"));
    const run = await npm(args, { PORT: String(busyPort), DATA_DIR: dataDir, WORKSPACE: join(dataDir, "ws") }, node).finally(() =>
      rmSync(dataDir, { recursive: true, force: true }),
    );
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(ownLines(run.stderr)).toEqual([
      `${prefix}: port ${busyPort} on 127.0.0.1 is already in use (another server, or an earlier run of this one, listens there): stop it, or start with PORT=<another port> (PORT=0 picks a free one)`,
    ]);
    expect(run.stdout + run.stderr).not.toMatch(/EADDRINUSE|\n\s+at /);
    // dev:aws fails before it starts anything (its emulators take tens of seconds).
    if (prefix === "dev:aws") expect(run.stdout).not.toMatch(/DynamoDB|fauxqs|local cloud/);
  }, 90_000);
});

describe("npm run load:multitenant with no server there", () => {
  it("honours PORT and HARNESS_URL and names the URL it tried, exit 1", async () => {
    const port = await freePort();
    const byPort = await npm(["run", "load:multitenant"], { PORT: String(port), HARNESS_URL: "" });
    expect(byPort.code).toBe(1);
    expect(ownLines(byPort.stderr)).toEqual([
      `load: cannot reach the multitenant example at http://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}): start it with \`npm run example -- multitenant\`, or point this at it with PORT=, HARNESS_URL= or --url`,
    ]);
    const byUrl = await npm(["run", "load:multitenant"], { HARNESS_URL: `http://localhost:${port}` });
    expect(byUrl.code).toBe(1);
    expect(byUrl.stderr).toContain(`load: cannot reach the multitenant example at http://localhost:${port} (`);
  }, 60_000);
});
