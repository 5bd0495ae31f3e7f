/**
 * Subagents as an application declares them: which agents may spawn which as durable children
 * through the `task` tool, and the bounds on them. The engine checks and applies them
 * (`src/engine/subagents.ts`).
 */

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
  maxChildWaitMs?: number;
  /** Default `cancel_children`: a parent that settles cancels its unsettled children. */
  onParentTerminal?: OnParentTerminal;
}

/** The limits a field left out (or 0) takes. */
export const SUBAGENT_DEFAULTS = {
  maxChildrenPerRun: 8,
  maxDepth: 1,
  /** 0 = unbounded. */
  maxChildWaitMs: 0,
  onParentTerminal: "cancel_children",
} as const satisfies Required<SubagentLimits>;
