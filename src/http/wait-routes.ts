import type { Context, Hono } from "hono";
import type { AppEnv } from "./caller.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { parseCallbackBody, parseDecisionBody, readJsonObject } from "./request-body.ts";

/**
 * Durable waits (ADR 0025):
 * - `POST /agents/:agent/:instance/submissions/:submissionId/approvals/:callId` (`{approved, reason?}`):
 *   a person's decision on a call that asked approval. 200 with the decision (again for the same
 *   decision); 409 `already_decided` (another decision stands), `approval_not_requested`,
 *   `already_settled`; 404 `submission_not_found`, `call_not_found`; 400 a non-boolean
 *   `approved` or a reason over 4 KB.
 * - `GET /agents/:agent/:instance/approvals?session=`: `{approvals}`, the calls the session waits on a
 *   decision for.
 */
export function mountApprovalRoutes(app: Hono<AppEnv>): void {
  app.post("/agents/:agent/:instance/submissions/:submissionId/approvals/:callId", async (c) => {
    const body = parseDecisionBody(await readJsonObject(c));
    const decision = await c.var.caller.decide({
      agent: c.req.param("agent") ?? "",
      instance: c.req.param("instance") ?? "",
      submissionId: c.req.param("submissionId") ?? "",
      callId: c.req.param("callId") ?? "",
      approved: body.approved as boolean,
      ...(body.reason !== undefined ? { reason: body.reason } : {}),
    });
    return c.json(decision, 200);
  });

  app.get("/agents/:agent/:instance/approvals", async (c) => {
    const approvals = await c.var.caller.pendingApprovals({ agent: c.req.param("agent") ?? "", instance: c.req.param("instance") ?? "", session: c.req.query("session") });
    return c.json({ approvals }, 200);
  });
}

/**
 * `POST /callbacks/:callbackId` (`{"result": <json>}` or `{"error": "<text>"}`): the answer of a
 * deferred tool's call. 200 `{status: "answered", replayed}` (again for the same answer); 409
 * `already_answered` (another answer stands), `already_settled`; 404 `callback_not_found` (unknown,
 * closed or expired); 400 a body with neither or both.
 */
export function mountCallbackRoute(app: Hono<AppEnv>, runtime: Runtime): void {
  app.post("/callbacks/:callbackId", async (c: Context) => {
    const body = parseCallbackBody(await readJsonObject(c));
    return c.json(await runtime.resolveCallback(c.req.param("callbackId") ?? "", body as Parameters<Runtime["resolveCallback"]>[1]), 200);
  });
}
