import type { Hono } from "hono";
import type { Runtime } from "../runtime/runtime.ts";
import { DEFAULT_SESSION } from "../protocol/limits.ts";
import { RequestError } from "./http-errors.ts";
import { parseForkBody, readJsonObject } from "./request-body.ts";

/**
 * A conversation's lifecycle (ADR 0034):
 * - `DELETE /agents/:agent/:instance?session=[&cancel=true]`: deletes the session's conversation
 *   and everything it owns (records, checkpoint, submissions, blobs no other conversation
 *   references, subagents' conversations). 200 `{status: "deleted", session}`, the same again
 *   for a repeated or resumed deletion; 409 `session_busy` while a submission of it is unsettled,
 *   unless `cancel=true`, which cancels them first and waits for them to settle.
 * - `POST /agents/:agent/:instance/fork?session=` `{fromRecordId, instance?, session?, message?}`:
 *   a new session (same agent; `instance` default the source's, `session` default `fork-<ulid>`)
 *   whose history is the source session's log up to `fromRecordId`, then `message` dispatched
 *   into it. 201 `{agent, instance, session, conversationId, records, submissionId?}`; 400 when
 *   the record is not the conversation's or the target session has a conversation already.
 */
export function mountConversationRoutes(app: Hono, runtime: Runtime): void {
  app.delete("/agents/:agent/:instance", async (c) => {
    const session = c.req.query("session");
    await runtime.deleteConversation({
      agent: c.req.param("agent") ?? "",
      instance: c.req.param("instance") ?? "",
      session,
      cancel: booleanQuery(c.req.query("cancel"), "cancel"),
    });
    return c.json({ status: "deleted", session: session || DEFAULT_SESSION }, 200);
  });

  app.post("/agents/:agent/:instance/fork", async (c) => {
    const body = parseForkBody(await readJsonObject(c));
    const forked = await runtime.fork({
      agent: c.req.param("agent") ?? "",
      instance: c.req.param("instance") ?? "",
      session: c.req.query("session"),
      fromRecordId: body.fromRecordId,
      ...(body.instance !== undefined ? { targetInstance: body.instance } : {}),
      ...(body.session !== undefined ? { targetSession: body.session } : {}),
      ...(body.message !== undefined ? { message: body.message } : {}),
    });
    return c.json(forked, 201);
  });
}

function booleanQuery(raw: string | undefined, name: string): boolean {
  if (raw === undefined || raw === "false" || raw === "0") return false;
  if (raw === "true" || raw === "1" || raw === "") return true;
  throw new RequestError(400, "invalid_request", `invalid ${name} ${JSON.stringify(raw)}: expected true or false`);
}
