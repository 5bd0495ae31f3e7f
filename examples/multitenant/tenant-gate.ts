import type { MiddlewareHandler } from "hono";
import { TENANTS } from "./tenants.ts";

/**
 * Refuses `/agents/<agent>/<tenant>…` for a tenant this deployment does not serve (404 JSON,
 * nothing stored), before admission: an instance id is otherwise any id a caller names.
 */
export function tenantGate(): MiddlewareHandler {
  return async (c, next) => {
    let tenant = c.req.path.split("/")[3] ?? "";
    try {
      tenant = decodeURIComponent(tenant);
    } catch {
      // not a valid escape: not a tenant either
    }
    if (!Object.hasOwn(TENANTS, tenant)) {
      return c.json({ error: `unknown tenant ${JSON.stringify(tenant)}`, code: "not_found" }, 404);
    }
    await next();
  };
}
