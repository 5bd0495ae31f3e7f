import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { expect } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { readUntil, recordsOf, type SseFrame } from "../../support/test-server.ts";

/** The repository root (where `npm start` / `npm run example` run). */
export const ROOT = join(import.meta.dirname, "..", "..", "..");

/** An example running as a process, as a user starts it. */
export interface ExampleProcess {
  url: string;
  /** The node process (npm's child): the one signals go to. */
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  proc: ChildProcess;
}

const running = new Set<ExampleProcess>();

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts `npm <args>` (e.g. `["start"]` or `["run", "example", "--", "github-bot"]`) on a free
 * port (or `env.PORT`, to start again where a killed one listened) with the keyless model, and
 * resolves once its banner names the URL and pid. `nodeArgs`: run `node <nodeArgs>` from the
 * repository root instead of npm (an example under other Node options than its script's).
 */
export async function startExampleProcess(npmArgs: string[], env: Record<string, string>, nodeArgs?: string[]): Promise<ExampleProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const proc = spawn(nodeArgs ? process.execPath : "npm", nodeArgs ?? npmArgs, {
    cwd: ROOT,
    env: { ...process.env, MODEL: "", LOG_LEVEL: "info", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so cleanup reaches npm's child too
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /listening on (http:\/\/\S+)\n\s+model: .* pid: (\d+)/.exec(out);
    if (m) {
      const example: ExampleProcess = { url: m[1]!, pid: Number(m[2]), exited, output: () => out, proc };
      running.add(example);
      void exited.then(() => running.delete(example));
      expect(example.url).toBe(`http://127.0.0.1:${port}`);
      return example;
    }
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`${nodeArgs ? `node ${nodeArgs.join(" ")}` : `npm ${npmArgs.join(" ")}`} did not come up:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Kills every example process still running (an afterEach hook). */
export async function killExamples(): Promise<void> {
  for (const ex of running) {
    try {
      process.kill(-ex.proc.pid!, "SIGKILL");
    } catch {
      // already gone
    }
    await ex.exited;
  }
}

/** Stops an example as Ctrl-C does and waits for it to exit. */
export async function stopExample(ex: ExampleProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  process.kill(ex.pid, "SIGTERM");
  return await ex.exited;
}

/**
 * The records of a session's stream up to the settlement of `submissionId` (replay, then live
 * tail), read over HTTP as a client would.
 */
export async function recordsUntilSettled(streamUrl: string, submissionId: string, timeoutMs = 20_000): Promise<ConversationRecord[]> {
  const res = await fetch(streamUrl);
  expect(res.status).toBe(200);
  const settled = (frames: SseFrame[]) => recordsOf(frames).some((r) => r.kind === "submission_settled" && r.submissionId === submissionId);
  const { frames } = await readUntil(res, settled, timeoutMs);
  return recordsOf(frames);
}

/** The Node options `npm start` runs the built quickstart with (package.json's `start`: `node <options> build/quickstart.mjs`). */
export function startScriptNodeOptions(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const words = pkg.scripts.start!.split(/\s+/);
  expect(words[0]).toBe("node");
  expect(words.at(-1)).toBe("build/quickstart.mjs");
  return words.slice(1, -1);
}

/** The scripted OpenAI-compatible server (`test/support/fixtures/openai-compatible-server.ts`) as a process. */
export interface CompatibleServer {
  proc: ChildProcess;
  /** Its base URL (the API is under `/v1`). */
  url: string;
  /** What it printed so far (a `request …` line per request). */
  output(): string;
  /** Kills it and waits for the exit. */
  stop(): Promise<void>;
}

/** Starts the scripted OpenAI-compatible server and resolves once it listens. */
export async function startCompatibleServer(): Promise<CompatibleServer> {
  const server = join(ROOT, "test", "support", "fixtures", "openai-compatible-server.ts");
  const proc = spawn(process.execPath, [server], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const stop = async () => {
    if (proc.exitCode !== null) return;
    proc.kill("SIGKILL");
    await new Promise((r) => proc.once("exit", r));
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
    if (m) return { proc, url: m[1]!, output: () => out, stop };
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`the compatible server did not come up:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
