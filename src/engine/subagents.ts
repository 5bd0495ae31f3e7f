import type { TaskTarget } from "../drive/task-tool.ts";
import type { AgentDefinition } from "../agent/agent-definition.ts";

/**
 * Which agents may spawn which as durable children through the `task` tool: parent name →
 * spawnable target names. An agent that is no key gets no `task` tool.
 */
export type SubagentPolicy = Record<string, readonly string[]>;

/** What a parent's settlement does to its unsettled children. */
export type OnParentTerminal = "cancel_children" | "leave_running";

/** Bounds on subagents; every field is optional (absent or 0 → the default). */
export interface SubagentLimits {
  /** Unsettled children one parent run may have at once (default 8); a `task` call past it is an error result. */
  maxChildrenPerRun?: number;
  /** A submission at this depth or deeper gets no `task` tool (default 1: children cannot spawn). */
  maxDepth?: number;
  /** How long a parent waits for its children before they are cancelled (default unbounded). */
  maxWaitMs?: number;
  /** Default `cancel_children`: a parent that settles cancels its unsettled children. */
  onParentTerminal?: OnParentTerminal;
}

export const SUBAGENT_DEFAULTS = {
  maxChildrenPerRun: 8,
  maxDepth: 1,
  /** 0 = unbounded. */
  maxWaitMs: 0,
  onParentTerminal: "cancel_children",
} as const satisfies Required<SubagentLimits>;


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
  const count = (name: "maxChildrenPerRun" | "maxDepth" | "maxWaitMs") => {
    const v = l[name];
    if (v === undefined || v === 0) return SUBAGENT_DEFAULTS[name];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (name !== "maxWaitMs" && !Number.isInteger(v))) {
      throw new Error(`subagentLimits.${name} must be a ${name === "maxWaitMs" ? "finite number" : "whole number"} >= 0`);
    }
    return v;
  };
  const onParentTerminal = l.onParentTerminal ?? SUBAGENT_DEFAULTS.onParentTerminal;
  if (onParentTerminal !== "cancel_children" && onParentTerminal !== "leave_running") {
    throw new Error(`subagentLimits.onParentTerminal must be "cancel_children" or "leave_running"`);
  }
  return { maxChildrenPerRun: count("maxChildrenPerRun"), maxDepth: count("maxDepth"), maxWaitMs: count("maxWaitMs"), onParentTerminal };
}

/** The targets of `agent`'s `task` tool at `depth`, or undefined when it gets none. */
export function taskTargetsOf(subagents: Subagents | undefined, agent: string, depth: number): readonly TaskTarget[] | undefined {
  if (subagents === undefined || depth >= subagents.limits.maxDepth) return undefined;
  return subagents.targets.get(agent);
}
