/**
 * `POST /mcp`: every agent as an MCP tool over streamable HTTP, stateless (ADR 0051). Each request
 * builds its own server over `c.var.caller` (the caller's face, ADR 0043), answers, and is gone:
 * no session id, no affinity, so any process or Lambda container answers any request, and a task
 * is a submission the store holds. Answers to the approvals `tasks/result` asked are decided here.
 */
import type { Context, Hono } from "hono";
import { isHarnessError } from "../errors.ts";
import type { CallerRuntime } from "../runtime/caller-runtime.ts";
import type { AppEnv } from "./caller.ts";
import { approvalOfRequestId, decisionOfElicitation } from "./mcp-approvals.ts";
import { mcpServerFor, type McpServerOptions } from "./mcp-server.ts";

/** The path of the MCP endpoint. */
export const MCP_PATH = "/mcp";
/** Where MCP clients find the OAuth protected-resource metadata of `/mcp` (RFC 9728, path-inserted). */
export const MCP_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";

/** JSON-RPC's error codes the route answers itself. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/** A JSON-RPC error body with no id (the request's could not be read, or there is none to answer). */
export function jsonRpcError(c: Context, status: 400 | 403 | 404 | 405 | 413 | 500, code: number, message: string, data?: Record<string, unknown>, headers?: Record<string, string>): Response {
  return c.json({ jsonrpc: "2.0", id: null, error: { code, message, ...(data ? { data } : {}) } }, status, headers);
}

/** Mounts `POST /mcp` (and 405 for its GET and DELETE). The caller middleware and body limit are the app's. */
export function mountMcpRoute(app: Hono<AppEnv>, options: McpServerOptions): void {
  app.post(MCP_PATH, async (c) => {
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return jsonRpcError(c, 400, PARSE_ERROR, "Parse error: the body is not JSON");
    }
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length === 0) return jsonRpcError(c, 400, INVALID_REQUEST, "Invalid Request: empty batch");
    const answers = messages.filter((m) => approvalOfRequestId((m as { id?: unknown } | null)?.id) !== undefined && !("method" in (m as object)));
    if (answers.length > 0) {
      if (answers.length !== messages.length) return jsonRpcError(c, 400, INVALID_REQUEST, "Invalid Request: answers to approval requests must come alone");
      for (const answer of answers) {
        const refused = await decideAnswer(c.var.caller, answer as { id: string; result?: unknown });
        if (refused) return jsonRpcError(c, refused.status, INVALID_REQUEST, refused.message, { code: refused.code });
      }
      return c.body(null, 202);
    }
    const { transport } = await mcpServerFor(c.var.caller, { ...options, signal: c.req.raw.signal });
    return transport.handleRequest(c.req.raw, { parsedBody: body });
  });
  // Stateless: no stream of the server's own (GET) and no session to end (DELETE).
  const notAllowed = (c: Context) => jsonRpcError(c, 405, INVALID_REQUEST, "Method not allowed: this MCP server is stateless (POST only, no sessions)", undefined, { Allow: "POST" });
  app.get(MCP_PATH, notAllowed);
  app.delete(MCP_PATH, notAllowed);
}

/**
 * Decides the call an approval answer names, as the caller (its policy applies: the `decide`
 * action). An answer that decides nothing (the person closed the form, an error) leaves the call
 * waiting; the same decision again is fine. Otherwise a refusal to report.
 */
async function decideAnswer(caller: CallerRuntime, answer: { id: string; result?: unknown }): Promise<{ status: 400 | 403 | 404; code: string; message: string } | undefined> {
  const target = approvalOfRequestId(answer.id)!;
  const decision = decisionOfElicitation(answer.result);
  if (decision === undefined) return undefined;
  try {
    const { address } = await caller.submissionById(target.submissionId);
    await caller.decide({ agent: address.agent, instance: address.instance, submissionId: target.submissionId, callId: target.callId, ...decision });
    return undefined;
  } catch (err) {
    if (!isHarnessError(err)) throw err;
    if (err.code === "already_decided" || err.code === "already_settled") return undefined;
    const status = err.code === "forbidden" ? 403 : err.code.endsWith("_not_found") ? 404 : 400;
    return { status, code: err.code, message: err.message };
  }
}

/**
 * `GET /.well-known/oauth-protected-resource[/mcp]` (RFC 9728), what an MCP client reads after a
 * 401 to learn where users sign in: the issuers whose tokens the API accepts.
 */
export function mountResourceMetadata(app: Hono<AppEnv>, authorizationServers: readonly string[]): void {
  const handler = (c: Context) =>
    c.json(
      {
        resource: `${new URL(c.req.url).origin}${MCP_PATH}`,
        authorization_servers: [...authorizationServers],
        bearer_methods_supported: ["header"],
        resource_name: "resolute-harness agents (MCP)",
      },
      200,
      { "Cache-Control": "max-age=300" },
    );
  for (const path of [MCP_RESOURCE_METADATA_PATH, "/.well-known/oauth-protected-resource"]) app.get(path, handler);
}

/** The `resource_metadata` parameter of `/mcp`'s 401 challenge (MCP authorization, RFC 9728 §5.1). */
export function resourceMetadataChallenge(c: Context): string {
  return `resource_metadata="${new URL(c.req.url).origin}${MCP_RESOURCE_METADATA_PATH}"`;
}
