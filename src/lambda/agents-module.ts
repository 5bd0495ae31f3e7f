import type { AgentDefinition } from "../agent/agent-definition.ts";
import type { Interceptor, Observer } from "../ports/observer.ts";
import type { SubagentLimits, SubagentPolicy } from "../agent/subagent-policy.ts";

/**
 * What the module behind the `Harness` construct's `agentsEntry` exports, as named exports. The
 * worker and dlq functions bundle it (as `#harness-agents`) and build their runtime from it.
 *
 * Only `agents` is required. Exports the harness does not know are ignored, so a later version
 * can read new ones (a subagent policy, say) without breaking a module written for this one.
 */
export interface HarnessAgentsModule {
  /** The agents, by name (the `:agent` of every route). */
  readonly agents: Record<string, AgentDefinition>;
  /**
   * Observers of the functions that bundle this module, after the built-in telemetry observer:
   * the worker's claims, turns, recoveries and settlements, and the dlq function's. Admission
   * (`submission_admitted`) and sweeps happen in the http and sweeper functions, which know the
   * agents by name only and do not load this module.
   */
  readonly observers?: readonly Observer[];
  /**
   * Interceptors of the worker: each wraps every attempt, operation, model turn and tool call
   * (the first one is outermost), as `createRuntime`'s `interceptors` do.
   */
  readonly interceptors?: readonly Interceptor[];
  /** Durable subagents, as `createRuntime`'s `subagents`: parent name → spawnable agent names. */
  readonly subagents?: SubagentPolicy;
  /** As `createRuntime`'s `subagentLimits`. */
  readonly subagentLimits?: SubagentLimits;
}

/**
 * Checks the shape of an agents module at container start, so a mistake in it fails the set-up
 * with a message naming the export instead of a TypeError inside a run.
 * @throws when `agents` is not an object, or `observers` / `interceptors` is not an array of functions
 */
export function checkAgentsModule(mod: HarnessAgentsModule): HarnessAgentsModule {
  if (mod.agents === null || typeof mod.agents !== "object" || Array.isArray(mod.agents)) {
    throw new TypeError("the agents module must export `agents`, an object of agent definitions by name");
  }
  for (const name of ["observers", "interceptors"] as const) {
    const list: unknown = mod[name];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((f) => typeof f !== "function")) {
      throw new TypeError(`the agents module's \`${name}\` export must be an array of functions`);
    }
  }
  return mod;
}
