/**
 * Every agent is an MCP server (issue 36, ADR 0051): the SDK's `Client` over HTTP against
 * `serve()`'s `/mcp`: tools from the agents, calls that wait, tasks that are submissions (any
 * fresh connection answers them), cancel, approvals asked through elicitation, replays.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { mcpClient, startMcpTestServer, VERDICT_SCHEMA, type McpTestServer } from "../../support/mcp-kit.ts";

let h: McpTestServer;
const clients: Client[] = [];
const connect = async (options: Parameters<typeof mcpClient>[1] = {}) => {
  const client = await mcpClient(h.url, options);
  clients.push(client);
  return client;
};

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  await h?.close();
});

/** The text of a tool result. */
const textOf = (result: unknown) => ((result as CallToolResult).content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("");

/** Drains a task stream into its messages. */
async function drain<T>(stream: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const message of stream) out.push(message);
  return out;
}

describe("tools", () => {
  beforeEach(async () => {
    h = await startMcpTestServer();
  });

  it("lists each agent as a tool: its description, a message input, its result schema as outputSchema, tasks optional", async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["assistant", "judge", "support"]);
    const assistant = tools[0]!;
    expect(assistant.description).toBe("Echoes what you say.");
    expect(assistant.inputSchema.required).toEqual(["message"]);
    expect(Object.keys(assistant.inputSchema.properties ?? {})).toEqual(["message", "instance", "session"]);
    expect(assistant.outputSchema).toBeUndefined();
    expect(assistant.execution?.taskSupport).toBe("optional");
    expect(tools[1]!.outputSchema).toEqual(VERDICT_SCHEMA);
    // The server says it does tasks (tools/call as a task, list, cancel).
    expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call).toBeDefined();
  });

  it("tools/call dispatches a submission and answers its reply once it settles", async () => {
    const client = await connect();
    const result = await client.callTool({ name: "assistant", arguments: { message: "hello over MCP", instance: "mcp-1" } });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe("You said: hello over MCP");
    const submissionId = (result._meta as Record<string, string>)["resolute-harness/submissionId"]!;
    const detail = await h.runtime.submission({ agent: "assistant", instance: "mcp-1", submissionId });
    expect(detail.outcome?.status).toBe("succeeded");
  });

  it("an agent with a result schema answers structured content (validated by the client against outputSchema)", async () => {
    const client = await connect();
    await client.listTools();
    const result = await client.callTool({ name: "judge", arguments: { message: "judge this", instance: "mcp-1" } });
    expect(result.structuredContent).toEqual({ verdict: "fine", score: 7 });
  });

  it("without an instance the call goes to the caller's own (the operator's, without auth)", async () => {
    const client = await connect();
    await client.callTool({ name: "assistant", arguments: { message: "mine" } });
    const page = await h.runtime.listSubmissions({ agent: "assistant", instance: "operator" });
    expect(page.submissions).toHaveLength(1);
  });

  it("sends the streamed text as progress notifications when the client asks for progress", async () => {
    const client = await connect();
    const pieces: string[] = [];
    const result = await client.callTool({ name: "assistant", arguments: { message: "stream me please", instance: "mcp-1" } }, CallToolResultSchema, {
      onprogress: (p) => pieces.push(p.message ?? ""),
    });
    expect(textOf(result)).toBe("You said: stream me please");
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe("You said: stream me please");
  });

  it("a refused call is an error result naming the code, nothing stored", async () => {
    const client = await connect();
    const result = await client.callTool({ name: "assistant", arguments: { message: "x", instance: "bad instance!" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^invalid_request: /);
    await expect(client.callTool({ name: "nobody", arguments: { message: "x" } })).rejects.toThrow(/unknown tool "nobody"/);
    await expect(client.callTool({ name: "assistant", arguments: { text: "x" } })).rejects.toThrow(/message must be a non-empty string/);
  });

  it("a request whose _meta carries a dispatch id replays: the same submission, run once", async () => {
    const client = await connect();
    const call = () => client.callTool({ name: "assistant", arguments: { message: "once", instance: "mcp-1" }, _meta: { "resolute-harness/dispatchId": "mcp-replay-1" } });
    const first = await call();
    const again = await (await connect()).callTool({ name: "assistant", arguments: { message: "once", instance: "mcp-1" }, _meta: { "resolute-harness/dispatchId": "mcp-replay-1" } });
    expect((first._meta as Record<string, string>)["resolute-harness/submissionId"]).toBe("mcp-replay-1");
    expect((again._meta as Record<string, string>)["resolute-harness/submissionId"]).toBe("mcp-replay-1");
    expect(textOf(again)).toBe(textOf(first));
    const page = await h.runtime.listSubmissions({ agent: "assistant", instance: "mcp-1" });
    expect(page.submissions.map((s) => s.id)).toEqual(["mcp-replay-1"]);
    // The same id with another message is refused, as over HTTP.
    const conflict = await client.callTool({ name: "assistant", arguments: { message: "other", instance: "mcp-1" }, _meta: { "resolute-harness/dispatchId": "mcp-replay-1" } });
    expect(textOf(conflict)).toMatch(/^dispatch_conflict/);
  });
});

describe("reading the reply", () => {
  it("reads from the submission's admission on (a time floor), not from the start of the conversation's history", async () => {
    h = await startMcpTestServer();
    // The log reads the route makes through the caller's face, recorded once the history exists.
    const offsets: string[] = [];
    let recording = false;
    const as = h.runtime.as.bind(h.runtime);
    h.runtime.as = (principal) => {
      const face = as(principal);
      const records = face.records.bind(face);
      face.records = (conversationId, afterId, limit) => {
        if (recording) offsets.push(afterId ?? "");
        return records(conversationId, afterId, limit);
      };
      return face;
    };
    const client = await connect();
    for (const n of [1, 2, 3]) await client.callTool({ name: "assistant", arguments: { message: `earlier ${n}`, instance: "mcp-long" } });
    recording = true;
    const result = await client.callTool({ name: "assistant", arguments: { message: "the latest", instance: "mcp-long" } }, CallToolResultSchema, { onprogress: () => {} });
    recording = false;
    expect(textOf(result)).toBe("You said: the latest");
    expect(offsets.length).toBeGreaterThan(0);
    expect(offsets).not.toContain("");
  });
});

describe("a call past maxRequestWaitMs", () => {
  beforeEach(async () => {
    h = await startMcpTestServer({ maxRequestWaitMs: 300 });
  });

  it("answers an error naming the submission, which keeps running and settles", async () => {
    const client = await connect();
    const result = await client.callTool({ name: "assistant", arguments: { message: "[hold] slow", instance: "mcp-1" } });
    expect(result.isError).toBe(true);
    const submissionId = (result._meta as Record<string, string>)["resolute-harness/submissionId"]!;
    expect(textOf(result)).toContain(`submission ${submissionId} is still running after 300 ms and keeps running`);
    h.gate.release();
    const settled = await h.runtime.wait(submissionId);
    expect(settled.status).toBe("succeeded");
  });
  it("tasks/result past it: a -32001 error saying the task keeps running; tasks/get still answers", async () => {
    const client = await connect();
    const created = (await client.request(
      { method: "tools/call", params: { name: "assistant", arguments: { message: "[hold] slow task", instance: "mcp-1" }, task: {} } },
      (await import("@modelcontextprotocol/sdk/experimental/tasks")).CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    const taskId = created.task.taskId;
    await expect(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(
      `MCP error -32001: task ${taskId} has not finished after 300 ms and keeps running: poll tasks/get, then call tasks/result again`,
    );
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe("working");
    h.gate.release();
    await h.runtime.wait(taskId);
    expect(textOf(await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema))).toBe("You said: [hold] slow task");
  });
});

describe("tasks", () => {
  beforeEach(async () => {
    h = await startMcpTestServer();
  });

  it("a tools/call as a task returns the submission as the task; a fresh connection's tasks/get and tasks/result answer it", async () => {
    const client = await connect();
    const messages = await drain(client.experimental.tasks.callToolStream({ name: "assistant", arguments: { message: "as a task", instance: "mcp-1" } }, CallToolResultSchema, { task: { ttl: 60_000 } }));
    const created = messages.find((m) => m.type === "taskCreated") as { task: { taskId: string } };
    const taskId = created.task.taskId;
    const done = messages.at(-1) as { type: string; result: CallToolResult };
    expect(done.type).toBe("result");
    expect(textOf(done.result)).toBe("You said: as a task");
    // The task is the submission: the store knows it by that id.
    const detail = await h.runtime.submission({ agent: "assistant", instance: "mcp-1", submissionId: taskId });
    expect(detail.outcome?.status).toBe("succeeded");

    const fresh = await connect();
    const task = await fresh.experimental.tasks.getTask(taskId);
    expect(task.status).toBe("completed");
    expect(task.ttl).toBeNull();
    const result = await fresh.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(textOf(result)).toBe("You said: as a task");
  });

  it("tasks/get says working while the submission runs; tasks/list lists the caller's", async () => {
    const client = await connect();
    const created = (await client.request(
      { method: "tools/call", params: { name: "assistant", arguments: { message: "[hold] listed" }, task: { ttl: 60_000 } } },
      (await import("@modelcontextprotocol/sdk/experimental/tasks")).CreateTaskResultSchema,
    )) as { task: { taskId: string; status: string } };
    expect(created.task.status).toBe("working");
    await h.gate.entered();
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe("working");
    const listed = await (await connect()).experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => [t.taskId, t.status])).toEqual([[created.task.taskId, "working"]]);
    h.gate.release();
    await h.runtime.wait(created.task.taskId);
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe("completed");
  });

  it("tasks/cancel cancels the submission: the task is cancelled, the run stopped", async () => {
    const client = await connect();
    const created = (await client.request(
      { method: "tools/call", params: { name: "assistant", arguments: { message: "[hold] cancel me", instance: "mcp-1" }, task: {} } },
      (await import("@modelcontextprotocol/sdk/experimental/tasks")).CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    await h.gate.entered();
    const cancelled = await (await connect()).experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled.status).toBe("cancelled");
    const settled = await h.runtime.wait(created.task.taskId);
    expect(settled.errorCode).toBe("cancelled");
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe("cancelled");
    // A settled task cannot be cancelled again.
    await expect(client.experimental.tasks.cancelTask(created.task.taskId)).rejects.toThrow(/already cancelled/);
  });

  it("an unknown task id is not found", async () => {
    const client = await connect();
    await expect(client.experimental.tasks.getTask("01JNOSUCHTASK0000000000000")).rejects.toThrow(/task not found/);
  });

  it("a call waiting on approval is input_required; tasks/result asks through elicitation and the answer (on its own POST) decides it", async () => {
    const asked: string[] = [];
    const client = await connect({
      elicit: (message) => {
        asked.push(message);
        return { action: "accept", content: { approved: true } };
      },
    });
    const stream = client.experimental.tasks.callToolStream({ name: "support", arguments: { message: "refund 240", instance: "mcp-1" } }, CallToolResultSchema, { task: {} });
    const messages = await drain(stream);
    const statuses = messages.filter((m) => m.type === "taskStatus").map((m) => (m as { task: { status: string } }).task.status);
    expect(statuses).toContain("input_required");
    expect(asked).toEqual(['The agent asks to run refund({"amount":240}). Approve?']);
    const done = messages.at(-1) as { type: string; result: CallToolResult };
    expect(done.type).toBe("result");
    expect(textOf(done.result)).toBe("done: refunded $240");
    expect(h.log.refunds).toEqual([240]);
  });

  it("declining the elicitation denies the call: the model reads the denial, the tool never runs", async () => {
    const client = await connect({ elicit: () => ({ action: "decline" }) });
    const messages = await drain(client.experimental.tasks.callToolStream({ name: "support", arguments: { message: "refund 500", instance: "mcp-1" } }, CallToolResultSchema, { task: {} }));
    const done = messages.at(-1) as { type: string; result: CallToolResult };
    expect(done.type).toBe("result");
    expect(textOf(done.result)).toMatch(/^done: .*denied/i);
    expect(h.log.refunds).toEqual([]);
  });
});
