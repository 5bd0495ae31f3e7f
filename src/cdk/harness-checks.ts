import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Duration } from "aws-cdk-lib";
import { resolveLimits } from "../engine/subagents.ts";
import { HARNESS_FUNCTION_ROLES } from "../lambda/env.ts";
import { checkAgentNames, discoverAgentsModule, type DiscoveredAgentsModule } from "./agent-names.ts";
import type { HarnessProps } from "./harness-props.ts";
import { MIN_DYNAMO_DELTA_RETENTION_MS } from "../conversation/delta-folding.ts";

/**
 * What the `Harness` construct checks before it creates anything: the props that Lambda or SQS
 * would refuse at deployment, and the agents module's names and limits.
 */

/** The given agent names and subagent limits (checked), or those discovered from the agents module. */
export function agentsModuleOf(props: HarnessProps, agentsEntry: string): DiscoveredAgentsModule {
  const discovered = props.agentNames === undefined ? discoverAgentsModule(agentsEntry) : undefined;
  const given = (what: string, check: () => void) => {
    try {
      check();
    } catch (err) {
      throw new Error(`Harness: ${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const known: DiscoveredAgentsModule = discovered ?? { names: [] };
  if (props.agentNames !== undefined) given("agentNames", () => (known.names = checkAgentNames(props.agentNames!)));
  if (props.subagentLimits !== undefined) given("subagentLimits", () => (known.subagentLimits = resolveLimits(props.subagentLimits)));
  return known;
}

export function validate(
  props: HarnessProps,
  d: { workerTimeout: Duration; streamMax: Duration; httpTimeout: Duration; visibility: Duration; maxReceiveCount: number },
): void {
  const fifteenMinutes = Duration.minutes(15).toSeconds();
  if (d.workerTimeout.toSeconds() > fifteenMinutes) throw new Error("Harness: workerTimeout exceeds Lambda's 15 minutes");
  if (d.httpTimeout.toSeconds() > fifteenMinutes) throw new Error("Harness: httpTimeout exceeds Lambda's 15 minutes");
  if (d.visibility.toSeconds() < d.workerTimeout.toSeconds()) {
    throw new Error("Harness: queueVisibilityTimeout must be at least workerTimeout (Lambda rejects the event source otherwise)");
  }
  if (d.streamMax.toSeconds() + 10 > d.httpTimeout.toSeconds()) {
    throw new Error("Harness: streamMaxDuration must end at least 10 s before httpTimeout");
  }
  if (props.conversationRetention && props.conversationRetention.toMilliseconds() < 3_600_000) {
    throw new Error("Harness: conversationRetention must be at least an hour");
  }
  if (props.deltaRetention && props.deltaRetention.toMilliseconds() < MIN_DYNAMO_DELTA_RETENTION_MS) {
    throw new Error("Harness: deltaRetention must be at least 15 minutes (live readers must get a turn's deltas first)");
  }
  for (const origin of props.corsOrigins ?? []) {
    if (origin !== "*" && !/^https?:\/\/[^/\s,]+$/.test(origin)) {
      throw new Error(`Harness: corsOrigins: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path) or "*"`);
    }
  }
  if (!Number.isInteger(d.maxReceiveCount) || d.maxReceiveCount < 1 || d.maxReceiveCount > 1000) {
    throw new Error("Harness: maxReceiveCount must be an integer from 1 to 1000");
  }
  const handlers = props.handlerEntries ?? {};
  for (const role of HARNESS_FUNCTION_ROLES) {
    const given = handlers[role];
    if (given !== undefined && !existsSync(resolve(given))) throw new Error(`Harness: handler entry for ${role} not found: ${given}`);
  }
}
