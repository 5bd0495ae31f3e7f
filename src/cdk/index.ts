/**
 * `resolute-harness/cdk`: the serverless shape as a CDK construct. `Harness` bundles the four
 * Lambda handlers shipped in this package with the user's agents module (one copy of the harness
 * per asset). Needs the peers `aws-cdk-lib`, `constructs` and `esbuild`.
 */
export { Harness, type HarnessBedrockOptions, type HarnessLogLevel, type HarnessProps } from "./harness.ts";
export { HarnessApi, type HarnessApiGatewayOptions, type HarnessApiProps } from "./harness-api.ts";
export { HarnessSchedules, MAX_SCHEDULE_BODY_CHARS, type HarnessSchedule, type HarnessSchedulesProps } from "./harness-schedules.ts";
export { AgentNamesDiscoveryError } from "./agent-names.ts";
export { HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../lambda/env.ts";
export type { HarnessAgentsModule } from "../lambda/agents-module.ts";
