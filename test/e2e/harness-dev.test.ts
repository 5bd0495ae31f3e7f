import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { request } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../src/cli/program.ts";
import { freePort } from "./examples/support.ts";

/**
 * `harness dev` as a user runs it, on an agents module of their own in a folder of its own: the
 * API and the chat page on one port, the `.env` file loaded, and a new behaviour after an edit of
 * the module (or of `.env`) without a restart by hand. Its failures: no module, a busy port.
 */

const MAIN = join(import.meta.dirname, "..", "..", "src", "cli", "main.ts");
const SRC = join(import.meta.dirname, "..", "..", "src", "index.ts");
const BLOCKS = join(import.meta.dirname, "..", "..", "src", "agent", "block-stream.ts");
const POLL = { timeout: 60_000, interval: 250 };

let dir: string;

/** An agents module whose keyless agents answer `<tag> <GREETING>: <message>` (`tag` an expression: a string, or an import). */
function agentsModule(tag: string, names: string[], imports = ""): string {
  return `import type { AgentDefinition } from ${JSON.stringify(SRC)};
import { keylessModel, streamBlocks } from ${JSON.stringify(BLOCKS)};
${imports}
function reply(tag: string): AgentDefinition {
  return {
    initialize: ({ env }) => ({
      model: keylessModel("dev-test", "local"),
      streamFn: (model, context) => {
        const last = context.messages.at(-1);
        const text = last?.role === "user" && typeof last.content === "string" ? last.content : "";
        return streamBlocks(model, () => [{ type: "text", text: \`\${tag} \${env("GREETING") ?? "(no greeting)"}: \${text}\` }]);
      },
    }),
  };
}
export const agents: Record<string, AgentDefinition> = { ${names.map((n) => `${JSON.stringify(n)}: reply(${tag})`).join(", ")} };
`;
}

interface Dev {
  proc: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function startDev(args: string[], env: Record<string, string> = {}): Dev {
  const proc = spawn(process.execPath, [MAIN, "dev", ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  return { proc, output: () => out, exited };
}

async function ask(url: string, agent: string, body: string): Promise<string> {
  const res = await fetch(`${url}/agents/${agent}/dev-test?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body }) });
  if (res.status !== 200) return `HTTP ${res.status}`;
  const settled = (await res.json()) as { status: string; submissionId: string };
  const stream = await (await fetch(`${url}/agents/${agent}/dev-test`)).text();
  const completed = stream
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)) as { kind: string; submissionId: string; payload: { message?: { body?: { content?: { type: string; text?: string }[] } } } })
    .filter((r) => r.kind === "assistant_message_completed" && r.submissionId === settled.submissionId);
  return completed.map((r) => r.payload.message?.body?.content?.map((c) => c.text ?? "").join("") ?? "").join("");
}

/** Asks until the answer is what the current module gives (the server may be restarting). */
async function answerOf(url: string, agent: string, body: string): Promise<string> {
  try {
    return await ask(url, agent, body);
  } catch {
    return "unreachable";
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-dev-"));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("harness dev", () => {
  it("serves the module's agents and the chat page on one port, loads .env, and picks up edits of the module and of .env by itself", async () => {
    writeFileSync(join(dir, "agents.ts"), agentsModule('"v1"', ["helper"]));
    writeFileSync(join(dir, ".env"), "GREETING=hello\n");
    const port = await freePort();
    const dev = startDev([], { PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    try {
      await expect.poll(() => dev.output(), POLL).toContain("harness dev · ");
      // One line says where everything is.
      const line = dev.output().split("\n").find((l) => l.startsWith("harness dev · "))!;
      expect(line).toBe(
        `harness dev · ${url} (chat page at /, console at /console, API at /agents/<agent>/<instance>) · agents: helper from agents.ts · data: harness-data/harness.db · env: .env · saving a file reloads`,
      );
      expect(await answerOf(url, "helper", "hi")).toBe("v1 hello: hi");

      // The chat page, from the package, offering the module's agents.
      const page = await fetch(`${url}/`);
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await page.text()).toContain('<script type="module" src="/chat.js"></script>');
      expect(await (await fetch(`${url}/chat-config.json`)).json()).toEqual({ agents: ["helper"] });
      expect((await fetch(`${url}/chat.js`)).status).toBe(200);
      // The console, where calling an agent's tool directly is on (harness dev only): its answer
      // names the agent's tools (these agents have none), not a refusal.
      expect((await fetch(`${url}/console`)).status).toBe(200);
      const direct = await fetch(`${url}/console/api/agents/helper/dev-test/tools/clock`, { method: "POST", body: "{}" });
      expect(await direct.json()).toEqual({ error: 'agent helper has no tool "clock"; its tools: none', code: "invalid_request" });

      // An edit of the module: new behaviour and a new agent, no restart by hand.
      writeFileSync(join(dir, "agents.ts"), agentsModule('"v2"', ["helper", "second"]));
      await expect.poll(() => answerOf(url, "helper", "again"), POLL).toBe("v2 hello: again");
      expect(await (await fetch(`${url}/chat-config.json`)).json()).toEqual({ agents: ["helper", "second"] });
      expect(await answerOf(url, "second", "hey")).toBe("v2 hello: hey");
      // The conversation survived the restart: it lives in the SQLite store.
      const stream = await (await fetch(`${url}/agents/helper/dev-test`)).text();
      expect(stream).toContain("v1 hello: hi");
      expect(stream).toContain("v2 hello: again");

      // An edit of .env: the server starts again with it.
      writeFileSync(join(dir, ".env"), "GREETING=bonjour\n");
      await expect.poll(() => answerOf(url, "helper", "encore"), POLL).toBe("v2 bonjour: encore");

      // A broken module is said in one line, and the next save brings the server back.
      writeFileSync(join(dir, "agents.ts"), "export const agents = ;\n");
      await expect.poll(() => dev.output(), POLL).toContain("harness dev: cannot load agents.ts: ");
      // Where, as Node would say it: file:line:column and a code frame (issue 37).
      expect(dev.output()).toContain("harness dev: cannot load agents.ts: agents.ts:1:23: Expression expected\n  1 | export const agents = ;\n    |                       ^\n");
      writeFileSync(join(dir, "tag.ts"), 'export const TAG = "v3";\n');
      writeFileSync(join(dir, "agents.ts"), agentsModule("TAG", ["helper"], 'import { TAG } from "./tag.ts";'));
      await expect.poll(() => answerOf(url, "helper", "fixed"), POLL).toBe("v3 bonjour: fixed");
      // A file the module imports is watched too.
      writeFileSync(join(dir, "tag.ts"), 'export const TAG = "v4";\n');
      await expect.poll(() => answerOf(url, "helper", "imported"), POLL).toBe("v4 bonjour: imported");
      expect(dev.output()).toContain("harness dev: tag.ts changed, restarting");
    } finally {
      process.kill(-dev.proc.pid!, "SIGINT");
    }
    // Ctrl-C: the server closes gracefully (in-flight work released, not failed).
    expect(await dev.exited).not.toBeNull();
    expect(dev.output()).toContain("SIGINT: closing (in-flight work is released, not failed)");
    expect(dev.output()).not.toMatch(/ExperimentalWarning/);
  }, 240_000);

  it("no agents module: exit 2 saying what to pass; a busy port: one line naming it and PORT=, exit 1", async () => {
    const empty = mkdtempSync(join(tmpdir(), "harness-dev-empty-"));
    try {
      const none = startDev(["missing.ts"]);
      expect(await none.exited).toBe(EXIT.usage);
      expect(none.output()).toBe(
        "error: no agents module at missing.ts: pass the file that exports `agents` (harness dev path/to/agents.ts), or run `harness init` for a starting point\n",
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }

    writeFileSync(join(dir, "agents.ts"), agentsModule('"v1"', ["helper"]));
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as { port: number };
    try {
      const busy = startDev(["agents.ts", "--port", String(port)]);
      expect(await busy.exited).toBe(1);
      expect(busy.output()).toBe(
        `harness dev: port ${port} on 127.0.0.1 is already in use (another server, or an earlier run of this one, listens there): stop it, or start with PORT=<another port> or --port <another port> (0 picks a free one)\n`,
      );
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 60_000);

  it("--cors (repeatable, comma-separated) and CORS_ORIGINS: a preflight and a request from an allowed origin pass, another origin gets 403 origin_not_allowed, a non-loopback Host 403 host_not_allowed", async () => {
    writeFileSync(join(dir, "agents.ts"), agentsModule('"cors"', ["helper"]));
    const bad = startDev(["agents.ts", "--cors", "http://localhost:5173/"]);
    expect(await bad.exited).toBe(EXIT.usage);
    expect(bad.output()).toContain('error: --cors: "http://localhost:5173/" is not an origin (scheme://host[:port], no path or trailing slash)');

    for (const [args, env] of [
      [["--cors", "http://localhost:5173,http://localhost:3000", "--cors", "http://127.0.0.1:4173"], {}],
      [[], { CORS_ORIGINS: "http://localhost:3000, http://localhost:5173" }],
    ] as const) {
      const port = await freePort();
      const dev = startDev(["agents.ts", ...args], { PORT: String(port), ...env });
      try {
        await expect.poll(() => dev.output(), POLL).toContain("harness dev · ");
        expect(dev.output()).toMatch(/ · cors: [^·]*http:\/\/localhost:5173[^·]* · saving a file reloads/);
        const path = "/agents/helper/cors-test";
        const preflight = await raw(port, "OPTIONS", path, {
          origin: "http://localhost:5173",
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
        });
        expect(preflight.status).toBe(204);
        expect(preflight.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
        expect(String(preflight.headers["access-control-allow-methods"])).toContain("POST");
        const allowed = await raw(port, "POST", `${path}?wait=true`, { origin: "http://localhost:5173", "content-type": "application/json" }, JSON.stringify({ kind: "user", body: "hi" }));
        expect(allowed.status).toBe(200);
        expect(allowed.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
        expect(JSON.parse(allowed.body)).toMatchObject({ status: "succeeded" });

        const other = await raw(port, "POST", path, { origin: "http://evil.example", "content-type": "application/json" }, JSON.stringify({ kind: "user", body: "hi" }));
        expect(other.status).toBe(403);
        expect(JSON.parse(other.body)).toMatchObject({ code: "origin_not_allowed" });
        const otherPreflight = await raw(port, "OPTIONS", path, { origin: "http://evil.example", "access-control-request-method": "POST" });
        expect(otherPreflight.status).toBe(403);
        // The loopback rule of serve() stays: an allowed origin through a re-pointed name is refused.
        const rebound = await raw(port, "POST", path, { origin: "http://localhost:5173", host: `evil.example:${port}`, "content-type": "application/json" }, JSON.stringify({ kind: "user", body: "hi" }));
        expect(rebound.status).toBe(403);
        expect(JSON.parse(rebound.body)).toMatchObject({ code: "host_not_allowed" });
      } finally {
        process.kill(-dev.proc.pid!, "SIGINT");
      }
      await dev.exited;
    }
  }, 120_000);
});

describe("harness dev over MCP (issue 36)", () => {
  it("serves the module's agents as MCP tools at /mcp: the SDK client lists and calls them; MCP Inspector's CLI too when MCP_INSPECTOR names its binary", async () => {
    writeFileSync(join(dir, "agents.ts"), agentsModule('"mcp"', ["helper"]));
    writeFileSync(join(dir, ".env"), "GREETING=hello\n");
    const port = await freePort();
    const dev = startDev(["agents.ts"], { PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    const client = new Client({ name: "dev-test", version: "1" });
    try {
      await expect.poll(() => dev.output(), POLL).toContain("harness dev · ");
      await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", url)));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["helper"]);
      const result = await client.callTool({ name: "helper", arguments: { message: "hi", instance: "mcp-dev" } });
      expect(result.content).toEqual([{ type: "text", text: "mcp hello: hi" }]);
      const inspector = process.env.MCP_INSPECTOR;
      if (inspector) {
        // Installed apart (npm i @modelcontextprotocol/inspector): not a dependency of the package.
        const run = spawnSync(process.execPath, [inspector, "--cli", `${url}/mcp`, "--method", "tools/call", "--tool-name", "helper", "--tool-arg", "message=inspected", "instance=mcp-dev"], { encoding: "utf8", timeout: 60_000 });
        expect(run.status, run.stderr).toBe(0);
        expect(JSON.parse(run.stdout).content).toEqual([{ type: "text", text: "mcp hello: inspected" }]);
      }
    } finally {
      await client.close().catch(() => {});
      process.kill(-dev.proc.pid!, "SIGINT");
      await dev.exited;
    }
  }, 120_000);
});

/** One HTTP request with the headers as given (fetch would not send our own `Host`). */
function raw(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
