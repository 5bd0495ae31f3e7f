import type { Context, Hono } from "hono";
import type { ActivityState } from "../protocol/submission-view.ts";
import type { AppEnv } from "./caller.ts";
import { RequestError } from "./http-errors.ts";
import { readJsonObject } from "./request-body.ts";

/** Most records one `GET /console/api/records` answers. */
export const CONSOLE_RECORDS_MAX = 2_000;

/**
 * The console's API (ADR 0054), beside the routes it also calls (a session's submissions,
 * approvals, cancel):
 * - `GET /console/api/activity?limit=&before=&agent=&state=a,b&since=&until=`: submissions across
 *   agents and instances, newest activity first (`{submissions, next?}`); the operator's alone
 *   (the policy's `console` action on the deployment: 403 `forbidden` for anyone else)
 * - `POST /console/api/submissions/:submissionId/retry`: a failed submission dispatched again
 *   (202 `{submissionId, conversationId, retryOf, replayed}`; 200 when retried before), the operator's
 * - `POST /console/api/submissions/:submissionId/callbacks/:callId` (`{result}` or `{error}`): answers a
 *   call waiting for a callback by hand, as its third party would (`{status, replayed}`), the operator's
 * - `POST /console/api/agents/:agent/:instance/tools/:toolName` (`{args?, session?}`): calls one of the
 *   agent's tools directly (`{toolName, content, details?, isError, durationMs}`), the operator's,
 *   and only where `directToolCalls` is on (`harness dev`): 403 otherwise
 * - `GET /console/api/records?agent=&instance=&session=&after=&limit=`: a session's records as JSON
 *   (`{conversationId, records}`), what its timeline is drawn from (the `conversation` action)
 *
 * Query values are decoded here; the runtime checks them (400 `invalid_request` names the field).
 */
export function mountConsoleRoutes(app: Hono<AppEnv>): void {
  app.get("/console/api/activity", async (c) => {
    const states = c.req.query("state");
    const page = await c.var.caller.activity({
      limit: integerQuery(c, "limit"),
      before: c.req.query("before"),
      agent: c.req.query("agent") || undefined,
      states: states ? (states.split(",") as ActivityState[]) : undefined,
      since: integerQuery(c, "since", 15),
      until: integerQuery(c, "until", 15),
    });
    return c.json(page, 200);
  });

  app.post("/console/api/submissions/:submissionId/retry", async (c) => {
    const retried = await c.var.caller.retry(c.req.param("submissionId") ?? "");
    return c.json(retried, retried.replayed ? 200 : 202);
  });

  app.post("/console/api/submissions/:submissionId/callbacks/:callId", async (c) => {
    const body = await readJsonObject(c);
    const answered = await c.var.caller.answerCallback(c.req.param("submissionId") ?? "", c.req.param("callId") ?? "", body as { result: unknown });
    return c.json(answered, 200);
  });

  app.post("/console/api/agents/:agent/:instance/tools/:toolName", async (c) => {
    const body = await readJsonObject(c);
    const result = await c.var.caller.callTool({
      agent: c.req.param("agent") ?? "",
      instance: c.req.param("instance") ?? "",
      session: typeof body.session === "string" ? body.session : undefined,
      toolName: c.req.param("toolName") ?? "",
      args: body.args,
    });
    return c.json(result, 200);
  });

  app.get("/console/api/records", async (c) => {
    const address = { agent: c.req.query("agent") ?? "", instance: c.req.query("instance") ?? "", session: c.req.query("session") };
    const limit = integerQuery(c, "limit") ?? CONSOLE_RECORDS_MAX;
    if (limit < 1 || limit > CONSOLE_RECORDS_MAX) {
      throw new RequestError(400, "invalid_request", `limit must be from 1 to ${CONSOLE_RECORDS_MAX}, got ${limit}`);
    }
    const conversation = await c.var.caller.conversation(address);
    const records = await c.var.caller.records(conversation.id, c.req.query("after") ?? "", limit);
    return c.json({ conversationId: conversation.id, records }, 200);
  });
}

/** A query parameter that must be a decimal integer when present. */
function integerQuery(c: Context, name: string, digits = 9): number | undefined {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return undefined;
  if (!new RegExp(`^[0-9]{1,${digits}}$`).test(raw)) {
    throw new RequestError(400, "invalid_request", `invalid ${name} ${JSON.stringify(raw)}: expected an integer`);
  }
  return Number(raw);
}
