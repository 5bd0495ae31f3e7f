import type { Context, Hono } from "hono";
import type { AppEnv } from "./caller.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { RequestError } from "./http-errors.ts";

/**
 * The operator's view of an instance's submissions:
 * - `GET /agents/:agent/:instance/submissions?session=&status=&limit=&after=`: one page of a session's
 *   submissions, newest first (`{submissions, next?}`; pass `next` as `after` for the next page)
 * - `GET /agents/:agent/:instance/submissions/:submissionId`: one of them with its attempts
 *
 * Query values are decoded here; the runtime checks them (400 `invalid_request` names the field).
 */
export function mountSubmissionRoutes(app: Hono<AppEnv>): void {
  app.get("/agents/:agent/:instance/submissions", async (c) => {
    const page = await c.var.caller.listSubmissions({
      ...instanceOf(c),
      session: c.req.query("session"),
      status: c.req.query("status"),
      limit: integerQuery(c, "limit"),
      after: c.req.query("after"),
    });
    return c.json(page, 200);
  });

  app.get("/agents/:agent/:instance/submissions/:submissionId", async (c) => {
    const detail = await c.var.caller.submission({ ...instanceOf(c), submissionId: c.req.param("submissionId") ?? "" });
    return c.json(detail, 200);
  });
}

function instanceOf(c: Context): { agent: string; instance: string } {
  return { agent: c.req.param("agent") ?? "", instance: c.req.param("instance") ?? "" };
}

/** A query parameter that must be a decimal integer when present. */
function integerQuery(c: Context, name: string): number | undefined {
  const raw = c.req.query(name);
  if (raw === undefined) return undefined;
  if (!/^[0-9]{1,9}$/.test(raw)) {
    throw new RequestError(400, "invalid_request", `invalid ${name} ${JSON.stringify(raw)}: expected an integer`);
  }
  return Number(raw);
}
