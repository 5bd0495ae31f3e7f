/**
 * The fixture MCP server (`fixtures/mcp-server.ts`) as the tests start it: over streamable HTTP
 * as a process of its own, or as the options of a stdio toolset (the harness starts that one),
 * and the events it logged.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const MCP_FIXTURE = join(import.meta.dirname, "fixtures/mcp-server.ts");

/** One line of the fixture's log. */
export interface McpFixtureEvent {
  event: "started" | "call" | "cancelled" | "done";
  pid: number;
  tool?: string;
  args?: Record<string, unknown>;
  reason?: string;
  port?: number;
}

/** A fresh log file for a fixture (in a temporary directory). */
export function fixtureLog(): string {
  return join(mkdtempSync(join(tmpdir(), "mcp-fixture-")), "events.jsonl");
}

/** The events a fixture logged so far. */
export function fixtureEvents(log: string): McpFixtureEvent[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as McpFixtureEvent);
}

/** The options of a stdio toolset that starts the fixture (`mcpTools({...stdioFixture(log)})`). */
export function stdioFixture(log: string): { command: string; args: string[]; env: Record<string, string> } {
  return {
    command: process.execPath,
    args: ["--disable-warning=ExperimentalWarning", MCP_FIXTURE, "--stdio"],
    env: { PATH: process.env.PATH ?? "", MCP_FIXTURE_LOG: log },
  };
}

/** A fixture serving streamable HTTP. */
export interface HttpFixture {
  url: string;
  port: number;
  child: ChildProcess;
  /** SIGKILL, and waits for the exit. */
  kill(): Promise<void>;
}

/** Starts the fixture over streamable HTTP on `port` (0: any free one) and waits until it listens. */
export async function startHttpFixture(log: string, port = 0): Promise<HttpFixture> {
  const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", MCP_FIXTURE, "--http", String(port)], {
    env: { ...process.env, MCP_FIXTURE_LOG: log },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const listening = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`the MCP fixture exited (${code}) before listening: ${out}`)));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    url: `http://127.0.0.1:${listening}/mcp`,
    port: listening,
    child,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls `read` until `ok` (10 s at most). */
export async function until<T>(what: string, read: () => T | Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
