import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { eventually } from "../../support/test-server.ts";
import { killExamples, recordsUntilSettled, ROOT, startExampleProcess, type ExampleProcess } from "./support.ts";

/** `npm run example -- coder` as a process: its tools over HTTP, bash output narrated as it streams. */

let dataDir: string;
let ex: ExampleProcess;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-coder-"));
  ex = await startExampleProcess(["run", "example", "--", "coder"], { DATA_DIR: dataDir });
}, 60_000);
afterAll(async () => {
  await killExamples();
  rmSync(dataDir, { recursive: true, force: true });
});

async function dispatch(instance: string, body: unknown, wait = true): Promise<{ submissionId: string; status?: string }> {
  const res = await fetch(`${ex.url}/agents/coder/${instance}${wait ? "?wait=true" : ""}`, {
    method: "POST",
    body: JSON.stringify({ kind: "user", body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  expect(res.status).toBe(wait ? 200 : 202);
  return (await res.json()) as { submissionId: string; status?: string };
}

function outcomes(records: Awaited<ReturnType<typeof recordsUntilSettled>>) {
  return (records.filter((r) => r.kind === "tool_outcome") as ConversationRecordOf<"tool_outcome">[]).map((r) => r.payload);
}

describe("examples/coder", () => {
  it("listens on loopback only", async () => {
    expect(ex.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    const refused = await promisify(execFile)("npm", ["run", "example", "--", "coder"], {
      cwd: ROOT,
      env: { ...process.env, HOST: "0.0.0.0", PORT: "0", DATA_DIR: join(dataDir, "refused") },
    }).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toMatch(/HOST=0\.0\.0\.0 refused: the bash tool runs any command/);
  }, 60_000);

  it("write, edit and read a file of the workspace in one run", async () => {
    const sub = await dispatch("files", [
      { tool: "write", path: "notes/todo.md", content: "- ship it\n" },
      { tool: "edit", path: "notes/todo.md", oldText: "ship it", newText: "ship it (done)" },
      { tool: "read", path: "notes/todo.md" },
    ]);
    expect(sub.status).toBe("succeeded");
    expect(readFileSync(join(dataDir, "workspace", "notes", "todo.md"), "utf8")).toBe("- ship it (done)\n");
    const records = await recordsUntilSettled(`${ex.url}/agents/coder/files`, sub.submissionId);
    expect(outcomes(records).map((o) => [o.toolName, o.isError])).toEqual([
      ["write", false],
      ["edit", false],
      ["read", false],
    ]);
    expect(outcomes(records)[2]!.content).toEqual([{ type: "text", text: "- ship it (done)\n" }]);
  }, 30_000);

  it("a path out of the workspace is an error outcome the model sees; the run goes on", async () => {
    const sub = await dispatch("escape", { tool: "read", path: "../harness.db" });
    expect(sub.status).toBe("succeeded");
    const records = await recordsUntilSettled(`${ex.url}/agents/coder/escape`, sub.submissionId);
    const [outcome] = outcomes(records);
    expect(outcome).toMatchObject({ toolName: "read", isError: true });
    expect(JSON.stringify(outcome!.content)).toMatch(/outside the workspace/);
  }, 30_000);

  it("bash output reaches the observer line by line while the command still runs", async () => {
    const marker = `m${Date.now()}`;
    const sub = await dispatch("shell", `$ for i in 1 2 3; do echo ${marker} step $i; sleep 0.7; done`, false);
    const finished = () => /tool finished coder\/shell\/default \S+ bash/.test(ex.output());
    // The first line is narrated while the command still runs (two more lines and 1.4 s to go).
    await eventually(async () => (ex.output().includes(`bash | ${marker} step 1`) ? true : undefined), 20_000);
    expect(finished()).toBe(false);
    expect(ex.output()).not.toContain(`bash | ${marker} step 3`);
    await eventually(async () => (finished() ? true : undefined), 20_000);
    const out = ex.output();
    expect(out.indexOf(`${marker} step 2`)).toBeGreaterThan(out.indexOf(`${marker} step 1`));
    expect(out.indexOf(`${marker} step 3`)).toBeLessThan(out.search(/tool finished coder\/shell\/default \S+ bash/));
    const records = await recordsUntilSettled(`${ex.url}/agents/coder/shell`, sub.submissionId);
    expect(JSON.stringify(outcomes(records)[0]!.content)).toContain(`${marker} step 3\\n[exit code 0]`);
  }, 30_000);
});
