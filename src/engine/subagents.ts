import type { TaskTarget } from "../drive/task-tool.ts";
import type { AgentDefinition } from "../agent/agent-definition.ts";
import { SUBAGENT_DEFAULTS, type SubagentLimits, type SubagentPolicy } from "../agent/subagent-policy.ts";


/** The policy and limits, checked and with defaults applied. */
export interface Subagents {
  /** Parent → its targets, sorted by name, with their descriptions. */
  readonly targets: ReadonlyMap<string, readonly TaskTarget[]>;
  readonly limits: Readonly<Required<SubagentLimits>>;
}

/**
 * Checks a subagent policy and limits against the agents (a configuration mistake throws a plain
 * `Error` naming it) and applies the defaults.
 */
export function resolveSubagents(
  policy: SubagentPolicy | undefined,
  limits: SubagentLimits | undefined,
  definitions: Readonly<Record<string, AgentDefinition>>,
): Subagents {
  const targets = new Map<string, TaskTarget[]>();
  if (policy !== undefined && (policy === null || typeof policy !== "object" || Array.isArray(policy))) {
    throw new Error("subagents must be an object of parent agent name → spawnable agent names");
  }
  for (const [parent, names] of Object.entries(policy ?? {})) {
    if (!(parent in definitions)) throw new Error(`subagents: unknown parent agent ${JSON.stringify(parent)}`);
    if (!Array.isArray(names)) throw new Error(`subagents.${parent} must be an array of agent names`);
    const list: TaskTarget[] = [];
    for (const name of [...new Set(names)].sort()) {
      if (typeof name !== "string" || !(name in definitions)) {
        throw new Error(`subagents.${parent}: unknown target agent ${JSON.stringify(name)}`);
      }
      const description = definitions[name]!.description;
      list.push(description ? { name, description } : { name });
    }
    if (list.length > 0) targets.set(parent, list);
  }
  return { targets, limits: resolveLimits(limits) };
}

/**
 * The limits checked (a mistake throws a plain `Error` naming the field) with the defaults applied.
 */
export function resolveLimits(limits: SubagentLimits | undefined): Required<SubagentLimits> {
  const l = limits ?? {};
  if (l === null || typeof l !== "object") throw new Error("subagentLimits must be an object");
  const count = (name: "maxChildrenPerRun" | "maxDepth" | "maxChildWaitMs") => {
    const v = l[name];
    if (v === undefined || v === 0) return SUBAGENT_DEFAULTS[name];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (name !== "maxChildWaitMs" && !Number.isInteger(v))) {
      throw new Error(`subagentLimits.${name} must be a ${name === "maxChildWaitMs" ? "finite number" : "whole number"} >= 0`);
    }
    return v;
  };
  const onParentTerminal = l.onParentTerminal ?? SUBAGENT_DEFAULTS.onParentTerminal;
  if (onParentTerminal !== "cancel_children" && onParentTerminal !== "leave_running") {
    throw new Error(`subagentLimits.onParentTerminal must be "cancel_children" or "leave_running"`);
  }
  return { maxChildrenPerRun: count("maxChildrenPerRun"), maxDepth: count("maxDepth"), maxChildWaitMs: count("maxChildWaitMs"), onParentTerminal };
}

/** The targets of `agent`'s `task` tool at `depth`, or undefined when it gets none. */
export function taskTargetsOf(subagents: Subagents | undefined, agent: string, depth: number): readonly TaskTarget[] | undefined {
  if (subagents === undefined || depth >= subagents.limits.maxDepth) return undefined;
  return subagents.targets.get(agent);
}
