import type { Hono } from "hono";
import type { AppEnv } from "./caller.ts";
import { stream } from "hono/streaming";
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
 * - `GET /agents/:agent/:instance/export?session=`: the conversation as JSON Lines
 *   (`application/jsonl`; `protocol/conversation-export.ts`): a header, its records in log order,
 *   its attachments (bytes inline up to 256 KiB, else a download URL), an end line with the
 *   counts. 404 `conversation_not_found` without a conversation.
 * - `POST /agents/:agent/:instance/import?session=` with an export as the body: a new
 *   conversation for the session built from it (ids renewed). 201 `{agent, instance, session,
 *   conversationId, records, attachments}`; 400 `invalid_export` naming the bad line, 409
 *   `conversation_exists`; nothing written then.
 * - `POST /agents/:agent/:instance/fork?session=` `{fromRecordId, instance?, session?, message?}`:
 *   a new session (same agent; `instance` default the source's, `session` default `fork-<ulid>`)
 *   whose history is the source session's log up to `fromRecordId`, then `message` dispatched
 *   into it. 201 `{agent, instance, session, conversationId, records, submissionId?}`; 400 when
 *   the record is not the conversation's or the target session has a conversation already.
 */
export function mountConversationRoutes(app: Hono<AppEnv>): void {
  app.delete("/agents/:agent/:instance", async (c) => {
    const session = c.req.query("session");
    await c.var.caller.deleteConversation({
      agent: c.req.param("agent") ?? "",
      instance: c.req.param("instance") ?? "",
      session,
      cancel: booleanQuery(c.req.query("cancel"), "cancel"),
    });
    return c.json({ status: "deleted", session: session || DEFAULT_SESSION }, 200);
  });

  app.get("/agents/:agent/:instance/export", async (c) => {
    const exported = await c.var.caller.exportConversation({
      agent: c.req.param("agent") ?? "",
      instance: c.req.param("instance") ?? "",
      session: c.req.query("session"),
    });
    c.header("Content-Type", "application/jsonl; charset=utf-8");
    c.header("Content-Disposition", `attachment; filename="${exported.header.conversationId}.jsonl"`);
    c.header("Cache-Control", "no-store");
    return stream(c, async (out) => {
      // A failure midway ends the body without the end line: an import then refuses it as cut off.
      for await (const line of exported.lines) await out.write(`${JSON.stringify(line)}\n`);
    });
  });

  app.post("/agents/:agent/:instance/import", async (c) => {
    const imported = await c.var.caller.importConversation(
      { agent: c.req.param("agent") ?? "", instance: c.req.param("instance") ?? "", session: c.req.query("session") },
      await c.req.text(),
    );
    return c.json(imported, 201);
  });

  app.post("/agents/:agent/:instance/fork", async (c) => {
    const body = parseForkBody(await readJsonObject(c));
    // The fork writes where its body says: the caller's face checks it as an export of the
    // source and an import (and a dispatch) into the target (ADR 0043).
    const forked = await c.var.caller.fork({
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
