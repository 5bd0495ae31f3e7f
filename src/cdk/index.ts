/**
 * `resolute-harness/cdk`: the serverless shape as one CDK construct. `Harness` creates the table,
 * the bucket, the FIFO queue and its dead-letter queue, and four functions (http, worker, dlq,
 * sweeper) bundling the handlers shipped in this package with your agents module; idle, it costs
 * nothing. Needs the peers `aws-cdk-lib`, `constructs` and `esbuild`.
 *
 * @example
 * ```ts
 * import { App, Stack } from "aws-cdk-lib";
 * import { Harness } from "resolute-harness/cdk";
 *
 * const app = new App();
 * const stack = new Stack(app, "MyAgents");
 * new Harness(stack, "Harness", { agentsEntry: new URL("./agents.ts", import.meta.url).pathname });
 * ```
 *
 * @module
 */
export {
  Harness,
  type HarnessAuthOptions,
  type HarnessBedrockOptions,
  type HarnessCallbacksOptions,
  type HarnessChatPage,
  type HarnessCognitoAuthOptions,
  type HarnessJwtAuthOptions,
  type HarnessLogLevel,
  type HarnessOpenTelemetryOptions,
  type HarnessProps,
  type HarnessSecret,
  type HarnessTracingOptions,
} from "./harness.ts";
export { HarnessApi, type HarnessApiGatewayOptions, type HarnessApiProps } from "./harness-api.ts";
export { HarnessSchedules, MAX_SCHEDULE_BODY_CHARS, type HarnessSchedule, type HarnessSchedulesProps } from "./harness-schedules.ts";
export { AgentNamesDiscoveryError } from "./agent-names.ts";
export { HarnessPropsInvalid, LAMBDA_ENVIRONMENT_MAX_BYTES } from "./harness-checks.ts";
export { HarnessSecretInvalid } from "./harness-secrets.ts";
export { HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../lambda/env.ts";
export type { HarnessAgentsModule } from "../lambda/agents-module.ts";
