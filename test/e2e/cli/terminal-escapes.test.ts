import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineTool } from "../../../src/agent/define-tool.ts";
import { scriptedModel, type ScriptStep } from "../../../src/agent/scripted-model.ts";
import * as schema from "../../../src/agent/tool-schema.ts";
import { EXIT } from "../../../src/cli/program.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";

/**
 * Issue 33, point 9: what a model (or a user) writes reaches the operator's terminal only as
 * visible text. The `harness` command runs as a process against a server whose model answers with
 * terminal escape sequences in its text, its thinking, a tool call's arguments, the tool's
 * outcome and a provider error; the raw bytes never appear in what the process prints.
 */

/** Sets the window title, clears the screen, plants a hyperlink, overwrites the line, and the same in 8-bit C1. */
const HOSTILE =
  "a\x1b]0;pwned-title\x07b\x1b[2J\x1b[Hc\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\d\rOVERWRITTEN e\u009b31mf\u009d0;c1-title\u009cg\u0085h\u202eevil\u202c";

/** Bytes that act on a terminal: ESC, BEL, CR, DEL, and C1 controls as UTF-8 (C2 80–C2 9F); bidi overrides (E2 80 AA–AE). */
function actingBytes(out: Buffer): string[] {
  const found: string[] = [];
  for (let i = 0; i < out.length; i++) {
    const b = out[i]!;
    if (b === 0x1b || b === 0x07 || b === 0x0d || b === 0x7f) found.push(`0x${b.toString(16)} at ${i}`);
    if (b === 0xc2 && out[i + 1]! >= 0x80 && out[i + 1]! <= 0x9f) found.push(`C1 0x${out[i + 1]!.toString(16)} at ${i}`);
    if (b === 0xe2 && out[i + 1] === 0x80 && out[i + 2]! >= 0xaa && out[i + 2]! <= 0xae) found.push(`bidi at ${i}`);
  }
  return found;
}

const MAIN = join(import.meta.dirname, "..", "..", "..", "src", "cli", "main.ts");

/** `harness <args>` as a process, its output kept as bytes. */
function harnessBytes(args: string[]): Promise<{ code: number; stdout: Buffer; stderr: Buffer }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", MAIN, ...args],
      { env: { PATH: process.env.PATH ?? "" }, timeout: 60_000, encoding: "buffer" },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

/** Calls `echo` with the hostile text, then answers with it as thinking and text. */
const hostileStep: ScriptStep = (messages) =>
  messages.at(-1)?.role === "toolResult"
    ? [{ thinking: HOSTILE }, { text: HOSTILE }]
    : [{ toolCall: { id: "call-1", name: "echo", arguments: { text: HOSTILE } } }];

let runtime: Runtime;
let server: ServerHandle;
let url: string;

beforeAll(async () => {
  const echo = defineTool({
    name: "echo",
    label: "Echo",
    description: "Says the text back.",
    parameters: schema.obj({ text: schema.str() }),
    execute: async (_id, { text }) => ({ content: [{ type: "text", text }], details: {} }),
  });
  runtime = createRuntime({
    agents: {
      hostile: {
        initialize: () => {
          const scripted = scriptedModel(Array.from({ length: 100 }, () => hostileStep));
          return { model: scripted.model, streamFn: scripted.streamFn, tools: [echo] };
        },
      },
      failing: {
        initialize: () => {
          const scripted = scriptedModel(Array.from({ length: 100 }, () => [{ error: HOSTILE }]));
          return { model: scripted.model, streamFn: scripted.streamFn };
        },
      },
    },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
  url = server.url;
});

afterAll(async () => {
  await server?.close();
  await runtime?.close();
});

describe("harness prints a server's text with its control characters escaped", () => {
  it("send --wait, tail, tail --json, ls and ls <id>: no escape sequence, carriage return or C1 control reaches stdout or stderr", { timeout: 180_000 }, async () => {
    const sent = await harnessBytes(["send", "hostile/t-1", `user says ${HOSTILE}`, "--wait", "--url", url]);
    expect(sent.code, sent.stderr.toString()).toBe(EXIT.ok);
    const failed = await harnessBytes(["send", "failing/t-1", `user says ${HOSTILE}`, "--wait", "--url", url]);
    expect(failed.code, failed.stderr.toString()).toBe(EXIT.settledFailed);
    const runs = {
      sent,
      failed,
      tail: await harnessBytes(["tail", "hostile/t-1", "--url", url]),
      tailFailed: await harnessBytes(["tail", "failing/t-1", "--url", url]),
      tailJson: await harnessBytes(["--json", "tail", "hostile/t-1", "--url", url]),
      ls: await harnessBytes(["ls", "hostile/t-1", "--url", url]),
      lsFailed: await harnessBytes(["ls", "failing/t-1", "--url", url]),
      lsJson: await harnessBytes(["--json", "ls", "failing/t-1", "--url", url]),
    };
    const submissionId = /^(\S+)\s/m.exec(runs.lsFailed.stdout.toString().split("\n")[1]!)![1]!;
    Object.assign(runs, { detail: await harnessBytes(["ls", "failing/t-1", submissionId, "--url", url]) });

    for (const [name, run] of Object.entries(runs)) {
      expect(actingBytes(run.stdout), `${name} stdout`).toEqual([]);
      expect(actingBytes(run.stderr), `${name} stderr`).toEqual([]);
    }
    // What was escaped is there to read: the text, thinking, tool call and outcome, the user's message.
    const tail = runs.tail.stdout.toString();
    expect(tail).toContain("› user says a\\x1b]0;pwned-title\\x07b\\x1b[2J");
    expect(tail).toContain("\\rOVERWRITTEN e\\x9b31mf\\x9d0;c1-title\\x9cg\\x85h\\u202eevil\\u202c");
    expect(tail).toContain("echo({");
    expect(tail).toContain("✓ echo: a\\x1b]0;pwned-title");
    expect(runs.tailFailed.stdout.toString()).toContain("a\\x1b]0;pwned-title\\x07b");
    // JSON output stays JSON of the same text: C1 as \u escapes.
    const records = runs.tailJson.stdout.toString().trim().split("\n").map((l) => JSON.parse(l) as { kind: string; payload: { body?: string } });
    expect(records.find((r) => r.kind === "user_message")?.payload.body).toBe(`user says ${HOSTILE}`);
    expect((JSON.parse(runs.lsJson.stdout.toString()) as { submissions: { outcome?: { error?: string } }[] }).submissions[0]?.outcome?.error).toContain("\u009b31m");
  });

  it("a refusal's message from the server is printed with its controls escaped", { timeout: 60_000 }, async () => {
    const refused = await harnessBytes(["ls", "hostile/t-2", "--status", `x${HOSTILE}`, "--url", url]);
    expect(refused.code).toBe(EXIT.refused);
    expect(actingBytes(refused.stderr)).toEqual([]);
    // The server quotes the status as JSON (C0 escaped there already); C1 and bidi were raw.
    expect(refused.stderr.toString()).toContain("OVERWRITTEN e\\x9b31mf\\x9d0;c1-title\\x9cg\\x85h\\u202eevil");
  });
});
