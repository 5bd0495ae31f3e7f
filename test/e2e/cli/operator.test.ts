import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import type { SubmissionDetail, SubmissionPage } from "../../../src/protocol/submission-view.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";
import { harness } from "./support.ts";

/** The operator's commands (`ls`), as a process against a running server. */

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer();
});
afterAll(async () => {
  await h?.close();
});

describe("harness ls", () => {
  it("lists a session's submissions newest first, pages with --after, and shows one with its attempts", async () => {
    const ids: string[] = [];
    for (const text of ["first", "second", "third"]) {
      const sent = await harness(["--json", "send", "assistant/ops-1", text, "--wait", "--session", "s1", "--url", h.url]);
      expect(sent.code).toBe(EXIT.ok);
      ids.push((JSON.parse(sent.stdout) as { submissionId: string }).submissionId);
    }

    const ls = await harness(["ls", "assistant/ops-1", "--session", "s1", "--url", h.url]);
    expect(ls).toMatchObject({ code: EXIT.ok, stderr: "" });
    const lines = ls.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+ATTEMPTS\s+CREATED\s+TOOK\s+OUTCOME\s+TOKENS$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([...ids].reverse());
    expect(lines[1]).toMatch(/\bsettled\s+1\s+\d{4}-\d\d-\d\dT[\d:]+Z\s+\S+\s+succeeded\b/);

    const page = await harness(["ls", "assistant/ops-1", "-s", "s1", "--limit", "2", "--url", h.url]);
    expect(page.stdout.trim().split("\n").at(-1)).toBe(`more: --after ${ids[1]}`);
    const json = await harness(["--json", "ls", "assistant/ops-1", "-s", "s1", "--limit", "2", "--after", ids[1]!, "--url", h.url]);
    const older = JSON.parse(json.stdout) as SubmissionPage;
    expect(older.submissions.map((s) => s.id)).toEqual([ids[0]]);
    expect(older.next).toBeUndefined();

    const one = await harness(["ls", "assistant/ops-1", ids[0]!, "--url", h.url]);
    expect(one.code).toBe(EXIT.ok);
    expect(one.stdout).toContain(`submission  ${ids[0]}`);
    expect(one.stdout).toContain("message     [user] first");
    expect(one.stdout).toMatch(/attempts {4}1\n {2}\S+ {2}started \S+ {2}by \S+/);
    const oneJson = JSON.parse((await harness(["--json", "ls", "assistant/ops-1", ids[0]!, "--url", h.url])).stdout) as SubmissionDetail;
    expect(oneJson).toMatchObject({ id: ids[0], session: "s1", outcome: { status: "succeeded" } });

    const empty = await harness(["ls", "assistant/ops-1", "--url", h.url]);
    expect(empty.stdout).toBe("no submissions\n");
  });

  it("refuses a bad status with the server's code (exit 3), a bad --limit as a usage error (exit 2)", async () => {
    const status = await harness(["ls", "assistant/ops-2", "--status", "finished", "--url", h.url]);
    expect(status.code).toBe(EXIT.refused);
    expect(status.stderr).toContain("invalid_request");
    expect(status.stderr).toContain('invalid status "finished"');
    expect((await harness(["ls", "assistant/ops-2", "--limit", "ten", "--url", h.url])).code).toBe(EXIT.usage);
    const missing = await harness(["ls", "assistant/ops-2", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--url", h.url]);
    expect(missing.code).toBe(EXIT.refused);
    expect(missing.stderr).toContain("submission_not_found");
  });
});
