/**
 * `POST /mcp` as a route (ADR 0051): the HTTP API's authentication and policy (401 without a token,
 * another principal's task refused), MCP's OAuth protected-resource metadata in OIDC mode, the
 * JSON-RPC error shape for what is not JSON-RPC, the body limit, and no sessions (GET/DELETE 405).
 */
import { afterEach, describe, expect, it } from "vitest";
import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { anyOf, bearerTokenAuthenticator } from "../../../src/auth/authenticate.ts";
import { mcpClient, startMcpTestServer, type McpTestServer } from "../../support/mcp-kit.ts";

const TOKENS: Record<string, string> = { alice: "token-of-alice", bob: "token-of-bob", operator: "token-of-operator" };
const users = (request: Request) => {
  const header = request.headers.get("authorization");
  if (header === `Bearer ${TOKENS.alice}`) return { id: "alice" };
  if (header === `Bearer ${TOKENS.bob}`) return { id: "bob" };
  return null;
};
const auth = { authenticate: anyOf(bearerTokenAuthenticator({ token: TOKENS.operator! }), users) };

let h: McpTestServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  await h?.close();
  h = undefined;
});
const connect = async (token?: string) => {
  const client = await mcpClient(h!.url, token ? { token } : {});
  clients.push(client);
  return client;
};
const textOf = (result: unknown) => ((result as CallToolResult).content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("");

/** A JSON-RPC POST as an MCP client sends it. */
function post(body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${h!.url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", ...headers },
    body,
  });
}

describe("authentication and policy", () => {
  it("401 with a Bearer challenge without a token, nothing dispatched; the SDK client without a token fails to connect", async () => {
    h = await startMcpTestServer({ auth });
    const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "assistant", arguments: { message: "hi", instance: "alice" } } }));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="harness"');
    expect(((await res.json()) as { code: string }).code).toBe("unauthorized");
    await expect(connect()).rejects.toThrow();
    expect((await h.runtime.listSubmissions({ agent: "assistant", instance: "alice" })).submissions).toEqual([]);
  });

  it("a signed-in user calls into their own instance by default; another's instance is refused; another's task is not found to them", async () => {
    h = await startMcpTestServer({ auth, maxRequestWaitMs: 10_000 });
    const alice = await connect(TOKENS.alice);
    const mine = await alice.callTool({ name: "assistant", arguments: { message: "hi from alice" } });
    expect(textOf(mine)).toBe("You said: hi from alice");
    expect((await h.runtime.listSubmissions({ agent: "assistant", instance: "alice" })).submissions).toHaveLength(1);

    const theirs = await alice.callTool({ name: "assistant", arguments: { message: "into bob's", instance: "bob" } });
    expect(theirs.isError).toBe(true);
    expect(textOf(theirs)).toMatch(/^forbidden: /);
    expect((await h.runtime.listSubmissions({ agent: "assistant", instance: "bob" })).submissions).toEqual([]);

    const created = (await alice.request(
      { method: "tools/call", params: { name: "assistant", arguments: { message: "[hold] alice's task" }, task: {} } },
      (await import("@modelcontextprotocol/sdk/experimental/tasks")).CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    const taskId = created.task.taskId;
    const bob = await connect(TOKENS.bob);
    await expect(bob.experimental.tasks.getTask(taskId)).rejects.toThrow(/task not found/);
    await expect(bob.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/task not found/);
    await expect(bob.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).rejects.toThrow(/task not found/);
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([]);
    // Still alice's, still running; and the operator sees it.
    expect((await alice.experimental.tasks.getTask(taskId)).status).toBe("working");
    expect((await (await connect(TOKENS.operator)).experimental.tasks.getTask(taskId)).status).toBe("working");
    expect((await alice.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(taskId);
  });

  it("an approval answer for a call the principal may not see is refused (404, as an unknown task), the call still waits", async () => {
    h = await startMcpTestServer({ auth, maxRequestWaitMs: 10_000 });
    const operator = await connect(TOKENS.operator);
    const created = (await operator.request(
      { method: "tools/call", params: { name: "support", arguments: { message: "refund 300", instance: "alice" }, task: {} } },
      (await import("@modelcontextprotocol/sdk/experimental/tasks")).CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    const taskId = created.task.taskId;
    let pending: { callId: string }[] = [];
    while (pending.length === 0) {
      pending = await h.runtime.pendingApprovals({ agent: "support", instance: "alice" });
      if (pending.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    const answer = { jsonrpc: "2.0", id: `resolute-harness/approval:${JSON.stringify([taskId, pending[0]!.callId])}`, result: { action: "accept", content: { approved: true } } };
    const refused = await post(JSON.stringify(answer), { authorization: `Bearer ${TOKENS.bob}` });
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: { data: { code: string } } }).error.data.code).toBe("submission_not_found");
    expect(h.log.refunds).toEqual([]);
    expect(await h.runtime.pendingApprovals({ agent: "support", instance: "alice" })).toHaveLength(1);
    // Alice may decide in her instance.
    const accepted = await post(JSON.stringify(answer), { authorization: `Bearer ${TOKENS.alice}` });
    expect(accepted.status).toBe(202);
    expect((await h.runtime.wait(taskId)).status).toBe("succeeded");
    expect(h.log.refunds).toEqual([300]);
  });
});

describe("OAuth protected-resource metadata (OIDC mode)", () => {
  it("is published when auth names its authorization servers, and /mcp's 401 points to it", async () => {
    h = await startMcpTestServer({ auth: { ...auth, authorizationServers: ["https://issuer.example.com"] } });
    const meta = await fetch(`${h.url}/.well-known/oauth-protected-resource/mcp`);
    expect(meta.status).toBe(200);
    expect(await meta.json()).toEqual({
      resource: `${h.url}/mcp`,
      authorization_servers: ["https://issuer.example.com"],
      bearer_methods_supported: ["header"],
      resource_name: "resolute-harness agents (MCP)",
    });
    const res = await post("{}");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="harness", resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`);
  });

  it("is absent without an issuer", async () => {
    h = await startMcpTestServer({ auth });
    expect((await fetch(`${h.url}/.well-known/oauth-protected-resource/mcp`)).status).toBe(404);
  });
});

describe("what is not JSON-RPC", () => {
  it("a body that is not JSON: 400 with a JSON-RPC parse error", async () => {
    h = await startMcpTestServer();
    const res = await post("{not json");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not JSON" } });
  });

  it("JSON that is no JSON-RPC message: 400 with a JSON-RPC error; an empty batch likewise", async () => {
    h = await startMcpTestServer();
    const res = await post(JSON.stringify({ hello: "world" }));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { jsonrpc: string; error: { code: number } };
    expect(body.jsonrpc).toBe("2.0");
    expect(body.error.code).toBe(-32700);
    const empty = await post("[]");
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: { code: number } }).error.code).toBe(-32600);
  });

  it("a body over maxBodyBytes: 413 with a JSON-RPC error, nothing dispatched", async () => {
    h = await startMcpTestServer({ maxBodyBytes: 2_000 });
    const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "assistant", arguments: { message: "x".repeat(3_000), instance: "mcp-1" } } }));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request: body exceeds 2000 bytes", data: { code: "payload_too_large" } } });
    expect((await h.runtime.listSubmissions({ agent: "assistant", instance: "mcp-1" })).submissions).toEqual([]);
  });

  it("GET and DELETE /mcp: 405 (stateless: no server stream, no sessions)", async () => {
    h = await startMcpTestServer();
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${h.url}/mcp`, { method, headers: { accept: "text/event-stream" } });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32600);
    }
  });

  it("answers no session id: any instance takes the next request", async () => {
    h = await startMcpTestServer();
    const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }));
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(await res.text()).toContain('"protocolVersion":"2025-11-25"');
  });
});
