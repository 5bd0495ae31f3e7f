/**
 * Issue 36 part 1 on the embedded shape: an agent's MCP tools (`mcpTools`), against the fixture
 * MCP server (built with the SDK) as a real process, over stdio and streamable HTTP. The keyless
 * model calls a tool with `/<tool> {json}`.
 */
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defineTool, type HarnessTool } from "../../src/agent/define-tool.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { mcpTools, type McpToolsOptions } from "../../src/agent/mcp-tools.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { DANGLING_TOOL_CALL_MESSAGE } from "../../src/conversation/dangling.ts";
import { TOOL_ABORTED } from "../../src/drive/bounds.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import type { RuntimeConfig } from "../../src/runtime/runtime-config.ts";
import type { Store } from "../../src/store/store.ts";
import { fixtureEvents, fixtureLog, startHttpFixture, stdioFixture, until, type HttpFixture } from "../support/mcp-fixture.ts";
import { allRecords } from "../support/runtime-kit.ts";

const runtimes: Runtime[] = [];
const fixtures: HttpFixture[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close({ abandon: true }).catch(() => {});
  for (const f of fixtures.splice(0)) await f.kill();
});

const address = { agent: "assistant", instance: "mcp" };

function start(store: Store, server: McpToolsOptions, extra: { events?: HarnessEvent[]; config?: Partial<RuntimeConfig>; tools?: HarnessTool<any>[] } = {}): Runtime {
  const runtime = createRuntime({
    store,
    agents: { assistant: { initialize: () => ({ ...localModel(), tools: [...(extra.tools ?? []), mcpTools(server)] }) } },
    observers: extra.events ? [(e) => extra.events!.push(e)] : [],
    leaseMs: 2_000,
    sweepIntervalMs: 500,
    claimIntervalMs: 50,
    ...extra.config,
  });
  runtimes.push(runtime);
  return runtime;
}

/** Where the fixture runs: a stdio child of the harness, or an HTTP server of its own. */
async function serverFor(transport: "stdio" | "http", log: string): Promise<McpToolsOptions> {
  if (transport === "stdio") return stdioFixture(log);
  const fixture = await startHttpFixture(log);
  fixtures.push(fixture);
  return { url: fixture.url };
}

async function reply(store: Store, conversationId: string): Promise<string> {
  const log = await allRecords(store, conversationId);
  const last = log.filter((r) => r.kind === "assistant_message_completed").at(-1)!;
  const body = last.payload.message.body as { content: Array<{ type: string; text?: string }> };
  return body.content.map((b) => b.text ?? "").join("");
}

describe.each(["stdio", "http"] as const)("MCP tools over %s", (transport) => {
  it("a turn calls an MCP tool: the call is recorded before and its outcome after, and the model reads the result", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const runtime = start(store, await serverFor(transport, log));
    await runtime.start();
    const { submissionId, conversationId } = await runtime.dispatch({ ...address, message: { kind: "user", body: '/echo {"text":"hello"}' } });
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(await reply(store, conversationId)).toBe("`echo` returned: echo: hello");
    const kinds = (await allRecords(store, conversationId)).map((r) => r.kind);
    expect(kinds.indexOf("assistant_tool_call")).toBeLessThan(kinds.indexOf("tool_outcome"));
    expect(fixtureEvents(log).filter((e) => e.event === "call")).toMatchObject([{ tool: "echo", args: { text: "hello" } }]);
  });

  it("cancel interrupts a call in flight: the server is sent MCP's cancellation", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const runtime = start(store, await serverFor(transport, log));
    await runtime.start();
    const { submissionId } = await runtime.dispatch({ ...address, message: { kind: "user", body: "/slow" } });
    await until("the slow call", () => fixtureEvents(log), (e) => e.some((x) => x.event === "call" && x.tool === "slow"));
    await runtime.cancel(submissionId, "changed my mind");
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "failed", errorCode: "cancelled" });
    const cancelled = await until("the server's cancellation", () => fixtureEvents(log), (e) => e.some((x) => x.event === "cancelled"));
    // The reason is the one MCP's notifications/cancelled carried (the harness's abort), not a closed session's.
    expect(cancelled.filter((e) => e.event === "cancelled")).toMatchObject([{ tool: "slow", reason: expect.stringContaining(TOOL_ABORTED) }]);
    expect(cancelled.some((e) => e.event === "done"), "the handler stopped on the cancellation, not at its end").toBe(true);
  });

  it("a server killed mid-call gives the model an error result; the run goes on", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const runtime = start(store, await serverFor(transport, log));
    await runtime.start();
    const { submissionId, conversationId } = await runtime.dispatch({ ...address, message: { kind: "user", body: "/slow" } });
    const events = await until("the slow call", () => fixtureEvents(log), (e) => e.some((x) => x.event === "call" && x.tool === "slow"));
    process.kill(events.find((e) => e.event === "call")!.pid, "SIGKILL");
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const outcome = (await allRecords(store, conversationId)).find((r) => r.kind === "tool_outcome")!;
    expect(outcome.payload).toMatchObject({ toolName: "slow", isError: true });
    expect(await reply(store, conversationId)).toMatch(/^`slow` failed: MCP server .+: slow failed: /);
  });
});

describe("MCP tools: which tools, their names, approval, failures", () => {
  it("include, exclude and prefix choose and name the tools; structured content is the outcome's data", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const runtime = start(store, { ...(await serverFor("http", log)), include: ["echo", "add", "fail"], exclude: ["fail"], prefix: "fx_" });
    await runtime.start();
    const added = await runtime.dispatch({ ...address, message: { kind: "user", body: '/fx_add {"a":2,"b":3}' } });
    expect(await runtime.wait(added.submissionId)).toMatchObject({ status: "succeeded" });
    expect(await reply(store, added.conversationId)).toBe("`fx_add` returned: 5");
    const outcome = (await allRecords(store, added.conversationId)).find((r) => r.kind === "tool_outcome")!;
    expect(outcome.payload).toMatchObject({ toolName: "fx_add", data: { structuredContent: { sum: 5 } } });
    // The keyless model lists the agent's tools when asked for one it does not have.
    const unprefixed = await runtime.dispatch({ ...address, message: { kind: "user", body: '/echo {"text":"x"}' } });
    await runtime.wait(unprefixed.submissionId);
    expect(await reply(store, unprefixed.conversationId)).toBe(
      "There is no tool `echo`. This agent's tools: `/fx_echo` (requires text), `/fx_add` (requires a, b).",
    );
    expect(fixtureEvents(log).filter((e) => e.event === "call").map((e) => e.tool)).toEqual(["add"]);
  });

  it("headers reach an HTTP server", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const runtime = start(store, { ...(await serverFor("http", log)), headers: { "x-fixture-token": "t-123" } });
    await runtime.start();
    const { submissionId, conversationId } = await runtime.dispatch({ ...address, message: { kind: "user", body: "/whoami" } });
    await runtime.wait(submissionId);
    expect(await reply(store, conversationId)).toBe("`whoami` returned: token=t-123");
  });

  it("needsApproval by tool name: the call waits for a decision, runs once approved", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const runtime = start(store, { ...stdioFixture(log), needsApproval: ["echo"] });
    await runtime.start();
    const { submissionId, conversationId } = await runtime.dispatch({ ...address, message: { kind: "user", body: '/echo {"text":"careful"}' } });
    await until("the approval wait", () => store.getSubmission(submissionId), (s) => s.status === "waiting");
    const [pending] = await runtime.pendingApprovals(address);
    expect(pending).toMatchObject({ submissionId, toolName: "echo", args: { text: "careful" } });
    expect(fixtureEvents(log).filter((e) => e.event === "call"), "nothing runs before the decision").toEqual([]);
    await runtime.decide({ ...address, submissionId, callId: pending!.callId, approved: true });
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(await reply(store, conversationId)).toBe("`echo` returned: echo: careful");
    expect(fixtureEvents(log).filter((e) => e.event === "call")).toHaveLength(1);
    // Not asked: another tool of the same server runs at once.
    const other = await runtime.dispatch({ ...address, message: { kind: "user", body: '/add {"a":1,"b":1}' } });
    expect(await runtime.wait(other.submissionId)).toMatchObject({ status: "succeeded" });
  });

  it("a server down at attempt start fails the attempt (a clear error, a backoff) and a later attempt succeeds", async () => {
    const port = await freePort();
    const log = fixtureLog();
    const store = createMemoryStore();
    const events: HarnessEvent[] = [];
    const runtime = start(store, { url: `http://127.0.0.1:${port}/mcp` }, { events });
    await runtime.start();
    const { submissionId, conversationId } = await runtime.dispatch({ ...address, message: { kind: "user", body: '/echo {"text":"later"}' } });
    const backoff = await until(
      "a failed attempt",
      () => events.filter((e) => e.type === "recovery" && e.decision === "transient_backoff"),
      (e) => e.length > 0,
    );
    expect(backoff[0]).toMatchObject({ detail: expect.stringContaining(`MCP server http://127.0.0.1:${port}/mcp unavailable at attempt start`) });
    expect((await store.getSubmission(submissionId)).status).not.toBe("settled");
    fixtures.push(await startHttpFixture(log, port));
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect((await store.getSubmission(submissionId)).attemptCount).toBeGreaterThan(1);
    expect(await reply(store, conversationId)).toBe("`echo` returned: echo: later");
  });

  it("a crash after the call ran and before its outcome was recorded: recovered, the call is not run again", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const server = stdioFixture(log);
    let reached!: () => void;
    const ran = new Promise<void>((r) => (reached = r));
    const crashed = start(store, server, {
      config: {
        faults: (phase) => {
          if (phase !== "tool_ran") return;
          reached();
          return new Promise<never>(() => {}); // the process "dies" here
        },
      },
    });
    await crashed.start();
    const { submissionId, conversationId } = await crashed.dispatch({ ...address, message: { kind: "user", body: '/echo {"text":"once"}' } });
    await ran;
    await crashed.close({ abandon: true });
    const recovered = start(store, server);
    await recovered.start();
    expect(await recovered.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const outcome = (await allRecords(store, conversationId)).find((r) => r.kind === "tool_outcome")!;
    expect(outcome.payload).toMatchObject({ toolName: "echo", isError: true, content: [{ type: "text", text: DANGLING_TOOL_CALL_MESSAGE }] });
    expect(fixtureEvents(log).filter((e) => e.event === "call"), "the server saw one call").toHaveLength(1);
  });

  it("an approved call that crashed after tool_started is not run again on recovery", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const server = { ...stdioFixture(log), needsApproval: ["echo"] };
    let reached!: () => void;
    const ran = new Promise<void>((r) => (reached = r));
    const crashed = start(store, server, {
      config: {
        faults: (phase) => {
          if (phase !== "tool_ran") return;
          reached();
          return new Promise<never>(() => {}); // the process "dies" here
        },
      },
    });
    await crashed.start();
    const { submissionId, conversationId } = await crashed.dispatch({ ...address, message: { kind: "user", body: '/echo {"text":"approved once"}' } });
    await until("the approval wait", () => store.getSubmission(submissionId), (s) => s.status === "waiting");
    const [pending] = await crashed.pendingApprovals(address);
    await crashed.decide({ ...address, submissionId, callId: pending!.callId, approved: true });
    await ran;
    await crashed.close({ abandon: true });
    expect((await allRecords(store, conversationId)).map((r) => r.kind)).toContain("tool_started");
    const recovered = start(store, server);
    await recovered.start();
    expect(await recovered.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const outcome = (await allRecords(store, conversationId)).find((r) => r.kind === "tool_outcome")!;
    expect(outcome.payload).toMatchObject({ toolName: "echo", isError: true });
    expect(fixtureEvents(log).filter((e) => e.event === "call"), "the server saw one call").toHaveLength(1);
  });

  it("an MCP tool named like a local tool fails the run, naming the prefix to add", async () => {
    const log = fixtureLog();
    const store = createMemoryStore();
    const echo = defineTool({
      name: "echo",
      label: "Echo",
      description: "local",
      parameters: schema.obj({}),
      execute: async () => ({ content: [{ type: "text", text: "local" }], details: {} }),
    });
    const runtime = start(store, stdioFixture(log), { tools: [echo] });
    await runtime.start();
    const { submissionId } = await runtime.dispatch({ ...address, message: { kind: "user", body: "hi" } });
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "failed", errorCode: "run_failed", error: expect.stringContaining('two tools are named "echo": give the MCP toolset a prefix') });
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}
