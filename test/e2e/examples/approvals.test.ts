import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { killExamples, recordsUntilSettled, ROOT, startExampleProcess } from "./support.ts";

/**
 * `npm run example -- approvals` as a process (issue 22): its README's runbook run verbatim by
 * bash (only the port changed: the example is started on a free one), then a refund that waits
 * for a person across a kill -9 and a restart.
 */

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-approvals-"));
});
afterEach(killExamples);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** The README's first bash block, without the line that starts the example, on `port`. */
function runbook(port: number): string {
  const readme = readFileSync(join(ROOT, "examples", "approvals", "README.md"), "utf8");
  const block = /```bash\n([\s\S]*?)```/.exec(readme)![1]!;
  expect(block).toContain("npm run example -- approvals");
  return block
    .split("\n")
    .filter((line) => !line.startsWith("npm run example -- approvals"))
    .join("\n")
    .replaceAll("8492", String(port));
}

function bash(script: string): Promise<{ code: number; out: string }> {
  const file = join(dataDir, "runbook.sh");
  writeFileSync(file, script);
  return new Promise((resolve) => {
    execFile("bash", ["-euo", "pipefail", file], { cwd: ROOT, timeout: 400_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, out: stdout + stderr }),
    );
  });
}

describe("examples/approvals", () => {
  it("the README's runbook works verbatim", { timeout: 480_000 }, async () => {
    const ex = await startExampleProcess(["run", "example", "--", "approvals"], { DATA_DIR: join(dataDir, "runbook") });
    const port = Number(new URL(ex.url).port);
    const { code, out } = await bash(runbook(port));
    expect(code, out).toBe(0);
    // What the runbook's comments say it prints.
    expect(out).toMatch(/"status":"succeeded"/);
    expect(out).toMatch(/waiting\s+1\s+\S+\s+-\s+waits: approval refund \(call_refund_5_0\) until /);
    expect(out).toContain('  call_refund_5_0  refund {"amount":240,"order":"A-17"}  expires ');
    expect(out).toContain("call_refund_5_0 approved: the parcel arrived broken\n");
    expect(out).toContain("  ✓ refund: refunded $240 for order A-17\nrefunded $240 for order A-17\n— succeeded");
    expect(out).toContain('{"error":"approved must be true or false, got \\"yes\\"","code":"invalid_request"}');
    expect(out).toContain('"callId":"call_refund_9_0","approved":false');
    expect(out).toContain('{"error":"call \\"call_refund_9_0\\" was already denied (needs a manager)","code":"already_decided"}');
    expect(out).toContain("denied by a reviewer: needs a manager\n— succeeded");
    expect(out).toMatch(/\{"requests":\[\{"order":"A-17","callbackPath":"\/callbacks\/[A-Za-z0-9_-]{32}","requestedAt":"[^"]+"\}\]\}/);
    expect(out).toContain('{"status":"answered","replayed":false}');
    expect(out).toContain('{"error":"the callback was already answered with another answer","code":"already_answered"}');
    expect(out).toContain('{"tracking":"1Z999AA10123456784"}\n— succeeded');
    expect(out).toContain('"status":"cancelled"');
    expect(out).toContain("refunded $15 for order D-4\n— succeeded");
    expect(out, "the cancelled delayed message never ran").not.toContain("D-5\n");
    expect(ex.output()).toContain("refund: $240 paid back for order A-17");
    expect(ex.output(), "the denied refund never ran").not.toContain("$900 paid back");
  });

  it("a refund waiting for a person survives kill -9: after a restart it is still pending, and approved it runs once", { timeout: 120_000 }, async () => {
    const dir = join(dataDir, "restart");
    const ex = await startExampleProcess(["run", "example", "--", "approvals"], { DATA_DIR: dir });
    const shop = `${ex.url}/agents/support/crash`;
    const admitted = await fetch(shop, { method: "POST", body: JSON.stringify({ kind: "user", body: "refund 300 for order K-9" }) });
    const { submissionId } = (await admitted.json()) as { submissionId: string };
    const pending = async (url: string) => ((await (await fetch(`${url}/approvals`)).json()) as { approvals: { callId: string }[] }).approvals;
    const deadline = Date.now() + 30_000;
    while ((await pending(shop)).length === 0) {
      if (Date.now() > deadline) throw new Error(`never asked:\n${ex.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    process.kill(ex.pid, "SIGKILL");
    await ex.exited;

    const again = await startExampleProcess(["run", "example", "--", "approvals"], { DATA_DIR: dir, PORT: new URL(ex.url).port });
    const [waiting] = await pending(shop);
    expect(waiting?.callId).toBe("call_refund_1_0");
    const decided = await fetch(`${shop}/submissions/${submissionId}/approvals/call_refund_1_0`, { method: "POST", body: JSON.stringify({ approved: true }) });
    expect(decided.status).toBe(200);
    const records = (await recordsUntilSettled(shop, submissionId, 30_000)).filter((r) => r.submissionId === submissionId);
    expect(records.filter((r) => r.kind === "tool_outcome").map((r) => r.payload)).toEqual([expect.objectContaining({ callId: "call_refund_1_0", isError: false })]);
    expect(records.find((r) => r.kind === "submission_settled")?.payload).toMatchObject({ status: "succeeded" });
    expect(again.output().match(/refund: \$300 paid back/g), "ran once").toHaveLength(1);
    expect(ex.output()).not.toContain("$300 paid back");
  });
});
