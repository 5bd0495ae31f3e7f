import type { AgentSetup } from "./agent-setup.ts";

/** What an initializer learns about the run it sets up. */
export interface InitializeContext {
  agent: string;
  instance: string;
  session: string;
  /** Reads a secret or setting ("" when absent); defaults to the process environment. */
  env: (name: string) => string;
  /**
   * Who the run acts for: the principal id of the caller who dispatched its message (a subagent's
   * is its parent's), for tools that act on the user's behalf (ADR 0043). Absent without
   * authentication, and for a manual compaction.
   */
  principalId?: string;
}

/**
 * A named agent. `initialize` runs on every claim, so per-instance setup (tenant prompts,
 * per-user tools) is first-class and no agent state is trusted across attempts.
 */
export interface AgentDefinition {
  /** Routing metadata (shown to parent models by the task tool). */
  description?: string;
  /**
   * A JSON Schema every reply of this agent must satisfy: the default `resultSchema` of its
   * dispatches (a dispatch's own wins; a manual compaction has none), so its submissions settle
   * with the parsed `result`. Built with `schema` (`resolute-harness`), it also types `result` in
   * a client made with `createClient<typeof agents>()`.
   */
  resultSchema?: unknown;
  initialize(context: InitializeContext): AgentSetup | Promise<AgentSetup>;
}
