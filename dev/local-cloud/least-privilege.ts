/**
 * Least privilege, both ways (issue 35, ADR 0048): after a rehearsal on the local cloud, each
 * action of each function's role is taken out in turn and every call the rehearsal made is
 * evaluated again against the policy without it. A grant whose removal refuses some call is used
 * (the call it would break is named); one whose removal refuses nothing is unused by what ran.
 * `logs:*` is not exercised (no CloudWatch Logs locally).
 */
import type { LocalCloud } from "./local-cloud.ts";
import type { StackTemplate } from "./stack-template.ts";
import { grantedActions } from "./assembly-mutation.ts";

export interface GrantUse {
  /** The function's role in the harness (`http`, `worker`, …). */
  role: string;
  action: string;
  /** `used`: a call of the rehearsal needs it; `unused`; `not-exercised`: a service the local cloud does not emulate. */
  verdict: "used" | "unused" | "not-exercised";
  /** The first call its removal refuses (`action on resource`). */
  neededBy?: string;
}

const NOT_EMULATED_SERVICES = ["logs:", "bedrock:", "kms:", "xray:"];

/** The matrix of `cloud`'s calls so far against every grant of `stack`'s functions' roles. */
export async function leastPrivilegeMatrix(cloud: LocalCloud, stack: StackTemplate, assemblyDir: string): Promise<GrantUse[]> {
  if (!cloud.iam) throw new Error("the least-privilege matrix needs the local cloud's IAM gate (iam: true)");
  const granted = grantedActions(assemblyDir);
  const rows: GrantUse[] = [];
  for (const fn of stack.functions) {
    if (!fn.roleLogicalId) continue;
    for (const action of granted.get(fn.roleLogicalId) ?? []) {
      if (NOT_EMULATED_SERVICES.some((s) => action.startsWith(s))) {
        rows.push({ role: fn.role, action, verdict: "not-exercised" });
        continue;
      }
      const refused = await cloud.iam.replayWithout(fn.roleLogicalId, action);
      rows.push(refused.length > 0 ? { role: fn.role, action, verdict: "used", neededBy: `${refused[0]!.action} on ${refused[0]!.resource}` } : { role: fn.role, action, verdict: "unused" });
    }
  }
  return rows;
}

/** The matrix as a table, one grant a line. */
export function formatMatrix(rows: readonly GrantUse[]): string {
  const width = Math.max(...rows.map((r) => r.action.length));
  return rows.map((r) => `${r.role.padEnd(9)} ${r.action.padEnd(width)}  ${r.verdict === "used" ? `used: ${r.neededBy}` : r.verdict === "unused" ? "UNUSED by the rehearsal" : "not exercised locally"}`).join("\n");
}
