/**
 * MCP tools in the serverless shape (issue 36 part 1), on the local cloud (the real handlers
 * against DynamoDB Local and fauxqs): the worker function reaches the fixture MCP server over
 * streamable HTTP; a large result is stored like any other (spilled to S3: a DynamoDB item holds
 * at most 400 KB); a stdio server is refused in a Lambda function with a message naming why.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureEvents, fixtureLog, startHttpFixture, type HttpFixture } from "../../support/mcp-fixture.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/mcp-agents.ts", import.meta.url));
const log = fixtureLog();
let fixture: HttpFixture;
let later: HttpFixture | undefined;
let downPort: number;

// Started first: the local cloud's environment names its URL.
beforeAll(async () => {
  fixture = await startHttpFixture(log);
  downPort = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
});
afterAll(async () => {
  await fixture?.kill();
  await later?.kill();
});

const suite = useLocalCloud(() => ({
  agentsModule,
  workers: 1,
  workerTimeoutMs: 30_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "5000", MCP_FIXTURE_URL: fixture.url, MCP_DOWN_URL: `http://127.0.0.1:${downPort}/mcp` },
}));

async function dispatchAndWait(agent: string, body: string, whileWaiting?: (submissionId: string) => Promise<void>) {
  const instance = `mcp-${randomUUID().slice(0, 8)}`;
  const res = await fetch(`${suite.cloud.url}/agents/${agent}/${instance}${whileWaiting ? "" : "?wait=true"}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ kind: "user", body }),
  });
  expect(res.status).toBe(whileWaiting ? 202 : 200);
  const { submissionId, conversationId } = (await res.json()) as { submissionId: string; conversationId: string };
  await whileWaiting?.(submissionId);
  let sub = await suite.store.getSubmission(submissionId);
  for (let i = 0; i < 300 && sub.status !== "settled"; i++) {
    await new Promise((r) => setTimeout(r, 100));
    sub = await suite.store.getSubmission(submissionId);
  }
  const view = { submissionId, outcome: sub.outcome };
  const records = await suite.store.readRecords(conversationId);
  return { view, records };
}

function lastReply(records: Awaited<ReturnType<typeof suite.store.readRecords>>): string {
  const last = records.filter((r) => r.kind === "assistant_message_completed").at(-1)!;
  return (last.payload.message.body as { content: Array<{ text?: string }> }).content.map((b) => b.text ?? "").join("");
}

describe("MCP tools on the local cloud", () => {
  it("a turn calls an MCP tool over streamable HTTP from the worker function", async () => {
    suite.dumpLogsOnFailure();
    const { view, records } = await dispatchAndWait("remote", '/add {"a":20,"b":22}');
    expect(view.outcome).toMatchObject({ status: "succeeded" });
    expect(lastReply(records)).toBe("`add` returned: 42");
    expect(records.find((r) => r.kind === "tool_outcome")!.payload).toMatchObject({ toolName: "add", data: { structuredContent: { sum: 42 } } });
    expect(fixtureEvents(log).filter((e) => e.event === "call" && e.tool === "add")).toHaveLength(1);
  });

  it("a result larger than a DynamoDB item is recorded and read back whole (spilled like any other)", async () => {
    suite.dumpLogsOnFailure();
    const { view, records } = await dispatchAndWait("remote", '/big {"bytes":600000}');
    expect(view.outcome).toMatchObject({ status: "succeeded" });
    const outcome = records.find((r) => r.kind === "tool_outcome")!.payload as { content: Array<{ text: string }> };
    expect(outcome.content[0]!.text).toHaveLength(600_000);
  });

  it("a server down at attempt start: the attempt fails with the reason and is retried; once the server listens, the submission succeeds", async () => {
    suite.dumpLogsOnFailure();
    const { view, records } = await dispatchAndWait("later", '/echo {"text":"at last"}', async (submissionId) => {
      let sub = await suite.store.getSubmission(submissionId);
      for (let i = 0; i < 300 && !(sub.lastError ?? "").includes("unavailable at attempt start"); i++) {
        await new Promise((r) => setTimeout(r, 100));
        sub = await suite.store.getSubmission(submissionId);
      }
      expect(sub.lastError).toContain(`MCP server http://127.0.0.1:${downPort}/mcp unavailable at attempt start`);
      expect(sub.status).not.toBe("settled");
      later = await startHttpFixture(log, downPort);
    });
    expect(view.outcome).toMatchObject({ status: "succeeded" });
    expect(lastReply(records)).toBe("`echo` returned: echo: at last");
    expect((await suite.store.getSubmission(view.submissionId)).attemptCount).toBeGreaterThan(1);
  });

  it("a stdio server is refused in a Lambda function: the submission fails with the reason, nothing is started", async () => {
    suite.dumpLogsOnFailure();
    const { view } = await dispatchAndWait("stdio", "hello");
    expect(view.outcome).toMatchObject({ status: "failed", errorCode: "run_failed" });
    expect(view.outcome!.error).toContain("cannot run in a Lambda function");
  });
});
