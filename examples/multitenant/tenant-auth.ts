import type { Authorize } from "../../src/protocol/principal.ts";
import { ownerPolicy } from "../../src/auth/owner-policy.ts";
import { TENANTS } from "./tenants.ts";

/** Whether `instance` is a tenant this deployment serves. */
export const isTenant = (instance: string): boolean => Object.hasOwn(TENANTS, instance);

/** The token claim naming a user's tenant (the dev issuer's `tenant`; in Cognito a custom attribute such as `custom:tenant`). */
export const TENANT_CLAIM = "tenant";

/**
 * The example's policy (ADR 0043), checked by the runtime for every request, wherever the request
 * names its instance (a fork's or an import's target included): an instance that is no tenant is
 * refused to everyone (the operator too: there is nothing to serve there), and a user reaches only
 * the tenant its token's `tenant` claim names (`ownerPolicy`); the operator reaches every tenant.
 * A refusal is 403 `forbidden`, decided before anything is read.
 */
export function tenantPolicy(): Authorize {
  const owner = ownerPolicy({ ownerClaim: TENANT_CLAIM });
  return (principal, action, target) => {
    if (target.kind === "session" && !isTenant(target.instance)) return false;
    return owner(principal, action, target);
  };
}
