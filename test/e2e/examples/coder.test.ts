import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { eventually } from "../../support/test-server.ts";
import { killExamples, recordsUntilSettled, ROOT, startExampleProcess, type ExampleProcess } from "./support.ts";

/** `npm run example -- coder` as a process: its tools over HTTP, bash output narrated as it streams. */

/** Values of secret variables the server runs with (the coder is keyless: nothing reads them). */
const SERVER_SECRETS = ["sk-ant-server-secret-value", "deploy-token-server-secret-value"] as const;

let dataDir: string;
let ex: ExampleProcess;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-coder-"));
  // Secrets in the server's environment, as a deployment has them: no command may see them.
  ex = await startExampleProcess(["run", "example", "--", "coder"], { DATA_DIR: dataDir, ANTHROPIC_API_KEY: SERVER_SECRETS[0], CODER_DEPLOY_TOKEN: SERVER_SECRETS[1] });
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

/**
 * Decides the one call of `instance` that waits for approval (the `bash` command off the
 * read-only allowlist): waits until it is listed, checks it is `submissionId`'s, decides it.
 */
async function decide(instance: string, submissionId: string, approved: boolean, headers: Record<string, string> = {}, url = ex.url): Promise<{ command: unknown; callId: string }> {
  const base = `${url}/agents/coder/${instance}`;
  const pending = await eventually(async () => {
    const list = (await (await fetch(`${base}/approvals`, { headers })).json()) as { approvals: { submissionId: string; callId: string; toolName: string; args: { command: unknown } }[] };
    return list.approvals[0];
  }, 20_000);
  expect(pending).toMatchObject({ submissionId, toolName: "bash" });
  const res = await fetch(`${base}/submissions/${submissionId}/approvals/${pending.callId}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ approved, reason: approved ? "fine" : "not today" }),
  });
  expect(res.status).toBe(200);
  return { command: pending.args.command, callId: pending.callId };
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
    await decide("shell", sub.submissionId, true);
    // The log after the decision: the model turn's call (answered by the approval request) was logged before it.
    const before = ex.output().length;
    const finished = () => /tool finished coder\/shell\/default \S+ bash/.test(ex.output().slice(before));
    // The first line is narrated while the command still runs (two more lines and 1.4 s to go).
    await eventually(async () => (ex.output().includes(`bash | ${marker} step 1`) ? true : undefined), 20_000);
    expect(finished()).toBe(false);
    expect(ex.output()).not.toContain(`bash | ${marker} step 3`);
    await eventually(async () => (finished() ? true : undefined), 20_000);
    const out = ex.output().slice(before);
    expect(out.indexOf(`${marker} step 2`)).toBeGreaterThan(out.indexOf(`${marker} step 1`));
    expect(out.indexOf(`${marker} step 3`)).toBeLessThan(out.search(/tool finished coder\/shell\/default \S+ bash/));
    const records = await recordsUntilSettled(`${ex.url}/agents/coder/shell`, sub.submissionId);
    expect(JSON.stringify(outcomes(records)[0]!.content)).toContain(`${marker} step 3\\n[exit code 0]`);
  }, 30_000);

  it("bash narration is capped per call: 50,000 lines of output write 100 log lines and one saying how many more", async () => {
    const marker = `flood${Date.now()}`;
    const sub = await dispatch("flood", `$ yes ${marker} | head -n 50000; echo end`, false);
    await decide("flood", sub.submissionId, true);
    const records = await recordsUntilSettled(`${ex.url}/agents/coder/flood`, sub.submissionId);
    expect(records.find((r) => r.kind === "submission_settled")).toMatchObject({ payload: { status: "succeeded" } });
    await eventually(async () => (/tool finished coder\/flood\/default \S+ bash/.test(ex.output()) ? true : undefined), 20_000);
    const narrated = ex.output().split("\n").filter((l) => l.includes(`bash | ${marker}`));
    expect(narrated.length).toBeGreaterThan(0);
    expect(narrated.length).toBeLessThanOrEqual(100);
    expect(ex.output()).toMatch(/bash \| … \d+ more lines not narrated \(call_/);
  }, 30_000);

  it("a read-only command of the allowlist runs at once; any other waits for a person: run once when approved, never when denied", async () => {
    const workspace = join(dataDir, "workspace");
    const ro = await dispatch("gate", "$ ls -a");
    expect(ro.status).toBe("succeeded");
    let records = await recordsUntilSettled(`${ex.url}/agents/coder/gate`, ro.submissionId);
    expect(records.some((r) => r.kind === "approval_requested")).toBe(false);
    expect(outcomes(records).map((o) => [o.toolName, o.isError])).toEqual([["bash", false]]);

    // Off the allowlist: parked, nothing run, until approved; then it runs once.
    const made = await dispatch("gate", "$ echo made >> made.txt", false);
    const { command } = await decide("gate", made.submissionId, true);
    expect(command).toBe("echo made >> made.txt");
    records = await recordsUntilSettled(`${ex.url}/agents/coder/gate`, made.submissionId);
    expect(readFileSync(join(workspace, "made.txt"), "utf8")).toBe("made\n");
    const mine = records.filter((r) => r.submissionId === made.submissionId);
    expect(mine.map((r) => r.kind).filter((k) => k.startsWith("approval_") || k === "tool_outcome")).toEqual(["approval_requested", "approval_decided", "tool_outcome"]);

    // Before the decision, nothing ran; denied, it never runs and the model reads why.
    const nope = await dispatch("gate", "$ echo nope > nope.txt", false);
    await eventually(async () => ((await (await fetch(`${ex.url}/agents/coder/gate/approvals`)).json()) as { approvals: unknown[] }).approvals[0], 20_000);
    expect(() => readFileSync(join(workspace, "nope.txt"))).toThrow();
    await decide("gate", nope.submissionId, false);
    records = await recordsUntilSettled(`${ex.url}/agents/coder/gate`, nope.submissionId);
    expect(() => readFileSync(join(workspace, "nope.txt"))).toThrow();
    const denied = outcomes(records.filter((r) => r.submissionId === nope.submissionId));
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({ toolName: "bash", isError: true });
    expect(JSON.stringify(denied[0]!.content)).toContain("denied by a reviewer: not today");
  }, 60_000);
});

describe("examples/coder: the allowlist holds what it claims (issue 33)", () => {
  it("reading outside the workspace (/proc/self/environ) and a flag that writes (file -C) wait for a person; approved, a command sees none of the server's secrets", async () => {
    const workspace = join(dataDir, "workspace");
    const environ = await dispatch("secrets", "$ cat /proc/self/environ", false);
    const asked = await decide("secrets", environ.submissionId, true);
    expect(asked.command).toBe("cat /proc/self/environ");
    const records = await recordsUntilSettled(`${ex.url}/agents/coder/secrets`, environ.submissionId);
    const [outcome] = outcomes(records.filter((r) => r.submissionId === environ.submissionId));
    const text = JSON.stringify(outcome!.content);
    expect(outcome!.isError, text).toBe(false);
    expect(text).toContain("CODER_BASH_CALL=");
    for (const secret of SERVER_SECRETS) expect(text).not.toContain(secret);
    expect(text).not.toContain("ANTHROPIC_API_KEY");

    const big = await dispatch("secrets", "$ file -C -m big", false);
    expect((await decide("secrets", big.submissionId, false)).command).toBe("file -C -m big");
    await recordsUntilSettled(`${ex.url}/agents/coder/secrets`, big.submissionId);
    expect(existsSync(join(workspace, "big.mgc"))).toBe(false);
  }, 60_000);
});

describe("examples/coder with CORS_ORIGINS (issue 24)", () => {
  it("refuses CORS_ORIGINS without API_TOKEN: any page it allows could run commands", async () => {
    const refused = await promisify(execFile)("npm", ["run", "example", "--", "coder"], {
      cwd: ROOT,
      env: { ...process.env, CORS_ORIGINS: "*", API_TOKEN: "", PORT: "0", DATA_DIR: join(dataDir, "cors-refused") },
    }).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toMatch(/CORS_ORIGINS refused without API_TOKEN/);
  }, 60_000);

  it("with API_TOKEN, a cross-origin page's POST (Origin: null) without the token is 401 and runs nothing; with it, the command runs", async () => {
    const cors = await startExampleProcess(["run", "example", "--", "coder"], { DATA_DIR: join(dataDir, "cors"), CORS_ORIGINS: "*", API_TOKEN: "t0ken" });
    const owned = join(dataDir, "cors", "workspace", "owned.txt");
    const post = (headers: Record<string, string>) =>
      fetch(`${cors.url}/agents/coder/page`, {
        method: "POST",
        headers: { origin: "null", "content-type": "text/plain", ...headers },
        body: JSON.stringify({ kind: "user", body: "$ id; echo OWNED > owned.txt" }),
      });
    const refused = await post({});
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: "unauthorized", code: "unauthorized" });
    await new Promise((r) => setTimeout(r, 300));
    expect(() => readFileSync(owned)).toThrow();
    const allowed = await post({ authorization: "Bearer t0ken" });
    expect(allowed.status).toBe(202);
    // Not on the read-only allowlist: it runs once a person approves it (with the token too).
    const { submissionId } = (await allowed.json()) as { submissionId: string };
    await decide("page", submissionId, true, { authorization: "Bearer t0ken" }, cors.url);
    expect(await eventually(async () => (existsSync(owned) ? readFileSync(owned, "utf8") : undefined), 20_000)).toBe("OWNED\n");
  }, 60_000);
});

