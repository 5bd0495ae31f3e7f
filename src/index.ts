/**
 * `resolute-harness`: durable agents on the pi agent loop. This entry is the authoring API: define
 * agents (model, tools, prompt, budgets), run them with `createRuntime`, and observe them. Every
 * other concern has its own entry, so an application bundles only what it uses: stores
 * (`resolute-harness/memory`, `/sqlite`, `/dynamodb`), the queue (`/sqs`), the HTTP surface
 * (`/http`, `/server`), the client (`/client`), the AWS construct (`/cdk`), and the adapter SPI
 * with its conformance suite (`/store`, `/store/conformance`).
 *
 * @example One keyless agent, run in-process and awaited:
 * ```ts
 * import { clockTool, createRuntime, localModel } from "resolute-harness";
 * import { createMemoryStore } from "resolute-harness/memory";
 *
 * const runtime = createRuntime({
 *   store: createMemoryStore(),
 *   agents: { assistant: { initialize: () => ({ ...localModel(), tools: [clockTool()] }) } },
 * });
 * await runtime.start();
 * const { submissionId } = await runtime.dispatch({
 *   agent: "assistant",
 *   instance: "demo",
 *   message: { kind: "user", body: "what time is it?" },
 * });
 * console.log((await runtime.wait(submissionId)).status); // "succeeded"
 * await runtime.close();
 * ```
 *
 * @module
 */

// Running agents: the runtime and what its methods take and answer.
export { createRuntime, type Runtime } from "./runtime/runtime.ts";
export type { RuntimeConfig } from "./runtime/runtime-config.ts";
export { RUNTIME_DEFAULTS } from "./runtime/defaults.ts";
export type { AttachmentPolicy } from "./protocol/attachment-policy.ts";
export type {
  DispatchRequest,
  InstanceAddress,
  SessionAddress,
  SteerRequest,
  SubmissionAddress,
  SubmissionListRequest,
} from "./runtime/requests.ts";
export type { DispatchResult } from "./engine/admission.ts";
export type { CancelResult } from "./engine/cancel.ts";
export type { Conversation } from "./store/submission.ts";
export { scheduledDispatch, type ScheduledFiring } from "./runtime/scheduled-dispatch.ts";

// Defining agents: definitions, setups, tools.
export type { AgentDefinition, InitializeContext } from "./agent/agent-definition.ts";
export type { AgentSetup, CompactionSetup } from "./agent/agent-setup.ts";
export { defineTool, type HarnessTool } from "./agent/define-tool.ts";
export * as schema from "./agent/tool-schema.ts";
export { clockTool, CLOCK_TOOL_NAME } from "./agent/clock-tool.ts";
export { scheduleMessageTool } from "./agent/schedule-message-tool.ts";
export { SUBAGENT_DEFAULTS, type OnParentTerminal, type SubagentLimits, type SubagentPolicy } from "./agent/subagent-policy.ts";

// Models: providers by name, and the keyless ones for development and tests.
export { ModelResolutionError, resolveModel, SUPPORTED_PROVIDERS, type ProviderEnvironment } from "./agent/models.ts";
export { localModel, type LocalModelOptions } from "./agent/local-model.ts";
export {
  scriptedModel,
  type ScriptBlock,
  type ScriptedCall,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptHookContext,
  type ScriptStep,
} from "./agent/scripted-model.ts";

// Observing: events, interceptors, the console log.
export type {
  Correlation,
  HarnessEvent,
  Interceptor,
  Observer,
  OpInfo,
  OpKind,
  Operation,
  RecoveryDecision,
} from "./ports/observer.ts";
export { consoleObserver, consoleTimingInterceptor, type ConsoleLogOptions } from "./logging/console.ts";

// Errors and time.
export { HarnessError, isHarnessError, type HarnessErrorCode } from "./errors.ts";
export { ManualClock, systemClock, type Clock } from "./ports/clock.ts";
