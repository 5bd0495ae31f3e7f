/**
 * Every agent is an MCP server, in the serverless shape (issue 36, ADR 0051): the SDK's `Client`
 * against the http function's `/mcp` on the local cloud (DynamoDB Local, fauxqs). Stateless: each
 * request may reach another http container, and a task is a submission the table holds, so it
 * survives the worker that runs it being killed, and a fresh connection answers it.
 */
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/experimental/tasks";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { inStatus, sleep, uid, waitFor } from "../../support/local-cloud-http.ts";
import { mcpClient } from "../../support/mcp-kit.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const LEASE_MS = 2_000;
const suite = useLocalCloud({
  agentsModule,
  workers: 2,
  workerTimeoutMs: 30_000,
  queueVisibilityTimeoutMs: 30_000,
  streamMaxMs: 3_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: String(LEASE_MS) },
});

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
});
const connect = async () => {
  const client = await mcpClient(suite.cloud.url);
  clients.push(client);
  return client;
};
const textOf = (result: unknown) => ((result as CallToolResult).content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("");

describe("MCP on the local cloud", () => {
  it("lists the agents the http function knows by name, and a tools/call answers the reply", async () => {
    suite.dumpLogsOnFailure();
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("assistant");
    const result = await client.callTool({ name: "assistant", arguments: { message: "hello through Lambda", instance: `mcp-${uid()}` } });
    expect(textOf(result)).toBe("You said: hello through Lambda");
  });

  it("a task survives its worker's SIGKILL: it completes once, and tasks/get from a fresh connection answers it", async () => {
    suite.dumpLogsOnFailure(150);
    const instance = `mcp-kill-${uid()}`;
    const client = await connect();
    const created = (await client.request(
      { method: "tools/call", params: { name: "stepper", arguments: { message: "steps=1 sleep=3000", instance }, task: { ttl: 600_000 } } },
      CreateTaskResultSchema,
    )) as { task: { taskId: string; status: string } };
    const taskId = created.task.taskId;
    expect(created.task.status).toBe("working");
    const first = await suite.store.getSubmission(taskId);
    await waitFor("the tool call", async () =>
      (await suite.store.readRecords(first.conversationId)).some((r) => r.kind === "assistant_tool_call") ? true : undefined,
    );
    await sleep(200); // inside the tool's 3 s
    const victim = suite.cloud.workers.find((w) => w.busy);
    expect(victim, "a worker is running the task").toBeDefined();
    const firstAttempt = (await suite.store.getSubmission(taskId)).attemptId;
    expect(victim!.kill("SIGKILL")).toBe(true);

    // Polled from fresh connections (a client that restarted, another http container).
    const statuses = new Set<string>();
    await waitFor(
      "the task to complete",
      async () => {
        const task = await (await connect()).experimental.tasks.getTask(taskId);
        statuses.add(task.status);
        return task.status === "completed" ? true : undefined;
      },
      60_000,
    );
    expect(statuses.has("failed")).toBe(false);
    const sub = await inStatus(suite.store, taskId, "settled");
    expect(sub.attemptCount).toBe(2);
    expect(sub.attemptId).not.toBe(firstAttempt);
    const records = await suite.store.readRecords(sub.conversationId);
    expect(records.filter((r) => r.kind === "submission_settled" && r.submissionId === taskId)).toHaveLength(1);
    const result = await (await connect()).experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(textOf(result)).toBe("done after 1 steps");
    expect((await (await connect()).experimental.tasks.listTasks()).tasks).toBeDefined();
  }, 120_000);

  it("tasks/cancel stops a running task on its worker", async () => {
    suite.dumpLogsOnFailure();
    const client = await connect();
    const created = (await client.request(
      { method: "tools/call", params: { name: "stepper", arguments: { message: "steps=5 sleep=2000", instance: `mcp-cancel-${uid()}` }, task: {} } },
      CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    const taskId = created.task.taskId;
    await inStatus(suite.store, taskId, "running");
    await (await connect()).experimental.tasks.cancelTask(taskId);
    await waitFor("the task to be cancelled", async () => ((await (await connect()).experimental.tasks.getTask(taskId)).status === "cancelled" ? true : undefined), 60_000);
    expect((await suite.store.getSubmission(taskId)).outcome?.errorCode).toBe("cancelled");
  }, 90_000);
});
