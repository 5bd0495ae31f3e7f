/**
 * A synthesized assembly with one grant taken away: the same assets (linked, not copied) and a
 * template whose role policies lack an action, as if the construct had never granted it. The
 * local cloud brought up from it shows what that grant is for (ADR 0048: least privilege both
 * ways): a used grant's removal makes a call fail with AccessDenied; an unused one changes nothing.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

type Statement = { Action?: string | string[]; [k: string]: unknown };
type Template = { Resources: Record<string, { Type: string; Properties?: { PolicyDocument?: { Statement?: Statement[] }; Roles?: unknown[] } }> };

/** What to take away: `action` from the policies of `roleLogicalId` (every role when absent). */
export interface GrantRemoval {
  action: string;
  roleLogicalId?: string;
}

/** Copies `assemblyDir` with `removal` applied to its stacks' templates; returns the new directory. */
export function assemblyWithout(assemblyDir: string, removal: GrantRemoval, into?: string): string {
  const out = into ?? mkdtempSync(join(tmpdir(), "harness-assembly-mutant-"));
  mkdirSync(out, { recursive: true });
  for (const entry of readdirSync(assemblyDir)) {
    const from = join(assemblyDir, entry);
    if (entry.endsWith(".template.json")) {
      const template = JSON.parse(readFileSync(from, "utf8")) as Template;
      removeAction(template, removal);
      writeFileSync(join(out, entry), JSON.stringify(template, null, 1));
    } else {
      symlinkSync(from, join(out, entry));
    }
  }
  return out;
}

/** Takes `removal.action` out of the matching policies (a statement left with no action goes). */
export function removeAction(template: Template, removal: GrantRemoval): number {
  let removed = 0;
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== "AWS::IAM::Policy") continue;
    const roles = (resource.Properties?.Roles ?? []).map((r) => (r as { Ref?: string }).Ref);
    if (removal.roleLogicalId && !roles.includes(removal.roleLogicalId)) continue;
    const doc = resource.Properties!.PolicyDocument!;
    doc.Statement = (doc.Statement ?? []).flatMap((s) => {
      const actions = Array.isArray(s.Action) ? s.Action : s.Action ? [s.Action] : [];
      const kept = actions.filter((a) => a !== removal.action);
      removed += actions.length - kept.length;
      if (kept.length === actions.length) return [s];
      return kept.length === 0 ? [] : [{ ...s, Action: kept.length === 1 ? kept[0] : kept }];
    });
  }
  return removed;
}

/** Each role's granted actions (role logical id → actions), as the least-privilege matrix walks them. */
export function grantedActions(assemblyDir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const entry of readdirSync(assemblyDir)) {
    if (!entry.endsWith(".template.json")) continue;
    const template = JSON.parse(readFileSync(join(assemblyDir, entry), "utf8")) as Template;
    for (const resource of Object.values(template.Resources)) {
      if (resource.Type !== "AWS::IAM::Policy") continue;
      for (const role of (resource.Properties?.Roles ?? []).map((r) => (r as { Ref?: string }).Ref).filter(Boolean) as string[]) {
        const actions = out.get(role) ?? [];
        for (const s of resource.Properties?.PolicyDocument?.Statement ?? []) {
          for (const a of Array.isArray(s.Action) ? s.Action : s.Action ? [s.Action] : []) if (!actions.includes(a)) actions.push(a);
        }
        out.set(role, actions);
      }
    }
  }
  return out;
}
