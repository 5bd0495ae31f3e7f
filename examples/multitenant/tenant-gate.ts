import type { MiddlewareHandler } from "hono";
import type { WriteCheck } from "../../src/http/write-check.ts";
import { TENANTS } from "./tenants.ts";

/** Whether `instance` is a tenant this deployment serves. */
const isTenant = (instance: string): boolean => Object.hasOwn(TENANTS, instance);

/**
 * Refuses `/agents/<agent>/<tenant>…` for a tenant this deployment does not serve (404 JSON,
 * nothing stored), before admission: an instance id is otherwise any id a caller names. It sees
 * only the path: writes that name their instance elsewhere pass {@link tenantWrites} too.
 */
export function tenantGate(): MiddlewareHandler {
  return async (c, next) => {
    let tenant = c.req.path.split("/")[3] ?? "";
    try {
      tenant = decodeURIComponent(tenant);
    } catch {
      // not a valid escape: not a tenant either
    }
    if (!isTenant(tenant)) {
      return c.json({ error: `unknown tenant ${JSON.stringify(tenant)}`, code: "not_found" }, 404);
    }
    await next();
  };
}

/**
 * The app's write check (`checkWrite`): every write goes into a tenant, wherever the request
 * names it (a fork's target instance is in its body), and a fork stays inside its tenant: one
 * tenant's history is never copied into another's.
 */
export function tenantWrites(): WriteCheck {
  return ({ action, target, source }) => {
    if (!isTenant(target.instance)) return { status: 404, error: `unknown tenant ${JSON.stringify(target.instance)}` };
    if (action === "fork" && source !== undefined && source.instance !== target.instance) {
      return { status: 403, error: `a fork stays inside its tenant: ${JSON.stringify(source.instance)} cannot fork into ${JSON.stringify(target.instance)}` };
    }
    return undefined;
  };
}
