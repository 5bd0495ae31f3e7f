import { AgentNotLoaded } from "../errors.ts";
import type { AgentDefinition } from "./agent-definition.ts";

/**
 * Agent definitions that carry nothing but their names, for a process that admits work or
 * sweeps but never runs an agent (the serverless http and sweeper functions). Admission needs
 * only to know which agents exist (an unknown one is `UnknownAgent`, 404), so such a process need
 * not load the agents module, its model providers or their SDKs. Should one of these be asked to
 * run all the same, `initialize` throws {@link AgentNotLoaded}.
 *
 * @param names the agent names, as the agents module exports them; each must satisfy
 *   `ID_RULES.agent` (`createRuntime` checks, see `runtime/requests.ts`).
 */
export function namesOnlyAgents(names: Iterable<string>): Record<string, AgentDefinition> {
  const agents: Record<string, AgentDefinition> = {};
  for (const name of names) {
    const definition: AgentDefinition = {
      initialize() {
        throw new AgentNotLoaded(name);
      },
    };
    NAMES_ONLY.add(definition);
    agents[name] = definition;
  }
  return agents;
}

const NAMES_ONLY = new WeakSet<AgentDefinition>();

/**
 * True for a definition made by {@link namesOnlyAgents}: its process does not know what the agents
 * module says about it (its subagent policy, say), and must not assume it has none.
 */
export function isNamesOnly(definition: AgentDefinition | undefined): boolean {
  return definition !== undefined && NAMES_ONLY.has(definition);
}
