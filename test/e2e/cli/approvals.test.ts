import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import type { PendingApproval } from "../../../src/protocol/approvals.ts";
import type { SubmissionPage } from "../../../src/protocol/submission-view.ts";
import { startApprovalServer, type ApprovalServer } from "../../support/approval-agent.ts";
import { harness } from "./support.ts";

/** `harness approve|deny` and the pending approvals under `harness ls`, as a process against a running server (ADR 0025). */

/**
 * A test here starts up to ten `harness` processes one after the other: each takes under a second
 * on an idle machine but ten at a load of 25 (measured), so the tests get more than the default 30 s.
 */
const PROCESSES_TIMEOUT_MS = 180_000;

let h: ApprovalServer;
beforeAll(async () => {
  h = await startApprovalServer();
});
afterAll(async () => {
  await h?.close();
});

async function pending(instance: string, n: number): Promise<PendingApproval[]> {
  const end = Date.now() + 10_000;
  for (;;) {
    const approvals = await h.runtime.pendingApprovals({ agent: "support", instance });
    if (approvals.length === n) return approvals;
    if (Date.now() > end) throw new Error(`expected ${n} pending approvals, got ${approvals.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("harness approve | deny", () => {
  it("ls shows what a waiting submission waits for and how to decide it; approve runs the call once, deny never; the same decision again is fine, another exit 3", async () => {
    const sent = await harness(["--json", "send", "support/cli-1", "refund 240 and refund 500", "--url", h.url]);
    expect(sent.code).toBe(EXIT.ok);
    const { submissionId } = JSON.parse(sent.stdout) as { submissionId: string };
    const [first, second] = (await pending("cli-1", 2)) as [PendingApproval, PendingApproval];

    const ls = await harness(["ls", "support/cli-1", "--url", h.url]);
    expect(ls).toMatchObject({ code: EXIT.ok, stderr: "" });
    expect(ls.stdout).toMatch(new RegExp(`^${submissionId}\\s+waiting\\s+1\\s.*waits: approval refund \\(${first.callId}\\)`, "m"));
    expect(ls.stdout).toContain("pending approvals:");
    expect(ls.stdout).toContain(`  ${first.callId}  refund {"amount":240}  expires `);
    expect(ls.stdout).toContain(`    harness approve support/cli-1 ${submissionId} ${first.callId}`);
    expect(ls.stdout).toContain(`  ${second.callId}  refund {"amount":500}  expires `);
    const lsJson = JSON.parse((await harness(["--json", "ls", "support/cli-1", "--url", h.url])).stdout) as SubmissionPage & { approvals: PendingApproval[] };
    expect(lsJson.approvals.map((a) => a.callId)).toEqual([first.callId, second.callId]);
    const detail = await harness(["ls", "support/cli-1", submissionId, "--url", h.url]);
    expect(detail.stdout).toMatch(new RegExp(`waits for   approval refund \\(${first.callId}\\) until \\S+; approval refund \\(${second.callId}\\)`));

    const approve = await harness(["approve", "support/cli-1", submissionId, first.callId, "--reason", "looks right", "--url", h.url]);
    expect(approve).toMatchObject({ code: EXIT.ok, stdout: `${first.callId} approved: looks right\n`, stderr: "" });
    const again = await harness(["--json", "approve", "support/cli-1", submissionId, first.callId, "--reason", "looks right", "--url", h.url]);
    expect(again.code, "the same decision again stands").toBe(EXIT.ok);
    expect(JSON.parse(again.stdout)).toMatchObject({ submissionId, callId: first.callId, approved: true, reason: "looks right" });
    const other = await harness(["deny", "support/cli-1", submissionId, first.callId, "--url", h.url]);
    expect(other.code).toBe(EXIT.refused);
    expect(other.stderr).toContain("already_decided, HTTP 409");

    const deny = await harness(["deny", "support/cli-1", submissionId, second.callId, "--reason", "over the limit", "--url", h.url]);
    expect(deny).toMatchObject({ code: EXIT.ok, stdout: `${second.callId} denied: over the limit\n` });

    expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const tail = await harness(["tail", "support/cli-1", "--url", h.url]);
    expect(tail.stdout).toContain(`⏸ refund {"amount":240} waits for approval (call ${first.callId}, until `);
    expect(tail.stdout).toContain(`approved call ${first.callId}: looks right`);
    expect(tail.stdout).toContain(`denied call ${second.callId}: over the limit`);
    expect(tail.stdout).toContain("done: refunded $240 | denied by a reviewer: over the limit");
    expect(h.log.refunds, "the approved call ran once, the denied one never").toEqual([240]);
    const after = await harness(["ls", "support/cli-1", "--url", h.url]);
    expect(after.stdout).not.toContain("pending approvals:");
    expect(after.stdout).toMatch(new RegExp(`^${submissionId}\\s+settled\\s`, "m"));
  }, PROCESSES_TIMEOUT_MS);

  it("refuses unknown calls and submissions (exit 3 with the server's code); a missing argument is a usage error (exit 2)", async () => {
    const sent = JSON.parse((await harness(["--json", "send", "support/cli-2", "refund 300", "--url", h.url])).stdout) as { submissionId: string };
    await pending("cli-2", 1);
    const noCall = await harness(["approve", "support/cli-2", sent.submissionId, "nope", "--url", h.url]);
    expect(noCall.code).toBe(EXIT.refused);
    expect(noCall.stderr).toContain("call_not_found, HTTP 404");
    const noSubmission = await harness(["deny", "support/cli-2", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "c", "--url", h.url]);
    expect(noSubmission.stderr).toContain("submission_not_found, HTTP 404");
    expect((await harness(["approve", "support/cli-2", sent.submissionId, "--url", h.url])).code).toBe(EXIT.usage);
    expect(await pending("cli-2", 1), "nothing decided").toHaveLength(1);
  }, PROCESSES_TIMEOUT_MS);
});
