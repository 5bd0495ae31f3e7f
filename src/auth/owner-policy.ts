/**
 * The default {@link Authorize} policy (ADR 0043): a principal reaches the agent instances it owns,
 * the operator reaches all.
 */
import { OPERATOR, type AccessAction, type AccessTarget, type Authorize, type Principal } from "../protocol/principal.ts";

/** Options of {@link ownerPolicy}. */
export interface OwnerPolicyOptions {
  /**
   * The claim whose value is the instance a principal owns (e.g. a tenant claim, so every user of
   * a tenant shares its instance). Default: none, the instance is the principal's id (a JWT's `sub`).
   */
  ownerClaim?: string;
  /** The role that reaches every instance. Default `"operator"`. */
  operatorRole?: string;
  /**
   * Roles one of which a principal must hold (beside owning the instance) to approve or deny a
   * call. Default: none needed, an owner decides its own agents' calls.
   */
  decideRoles?: readonly string[];
}

/**
 * Allows a principal the instances it owns (the instance id equals its owner value: `ownerClaim`'s
 * value, or its id), any attachment upload, and reading by digest the attachments it uploaded; the
 * operator role everything. An attachment it did not upload it reads through a conversation it
 * may read that references it (the runtime checks that, under the `conversation` action: ADR 0046).
 */
export function ownerPolicy(options: OwnerPolicyOptions = {}): Authorize {
  const operatorRole = options.operatorRole ?? OPERATOR;
  const decideRoles = options.decideRoles ?? [];
  if (options.ownerClaim !== undefined && (typeof options.ownerClaim !== "string" || options.ownerClaim === "")) {
    throw new Error("ownerPolicy: ownerClaim must be a non-empty claim name");
  }
  return (principal: Principal, action: AccessAction, target: AccessTarget): boolean => {
    if (principal.roles?.includes(operatorRole)) return true;
    if (target.kind === "attachment") return target.digest === undefined || target.uploaded === true;
    // The whole deployment (the console, ADR 0054) is the operator's alone.
    if (target.kind === "deployment") return false;
    const owner = ownerOf(principal, options.ownerClaim);
    if (owner === undefined || target.instance !== owner) return false;
    if (action === "decide" && decideRoles.length > 0) return decideRoles.some((role) => principal.roles?.includes(role));
    return true;
  };
}

/** The instance a principal owns: its `claim` when one is named (a string), else its id. */
export function ownerOf(principal: Principal, claim?: string): string | undefined {
  if (claim === undefined) return principal.id;
  const value = principal.claims?.[claim];
  return typeof value === "string" && value !== "" ? value : undefined;
}
