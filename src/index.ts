/**
 * resolute-harness: durable execution for pi agents. This entry holds the runtime, the
 * contracts and the keyless models; each adapter has its own subpath export
 * (`resolute-harness/memory`, `/sqlite`, `/dynamodb`, `/sqs`, `/http`, `/server`, `/client`,
 * `/storetest`), so an application bundles only what it uses.
 */
export * from "./errors.ts";
export * from "./protocol/records.ts";
export { newId, nextRecordIds } from "./conversation/ids.ts";
export { reduce, activeLeafPath, type ConversationTree, type ReducedEntry } from "./conversation/reducer.ts";
export type { LogCheckpoint } from "./conversation/checkpoint.ts";
export { project, projectPath, type Projection, type ProjectionOptions } from "./drive/projection.ts";
export type { Clock } from "./ports/clock.ts";
export { systemClock, ManualClock } from "./ports/clock.ts";
export type * from "./store/submission.ts";
export { sessionKeyString } from "./store/submission.ts";
export type * from "./store/store.ts";
export type * from "./store/child-outcome.ts";
export type * from "./ports/queue.ts";
export type * from "./ports/observer.ts";
export type { AgentDefinition, InitializeContext } from "./agent/agent-definition.ts";
export type { DeadLetterOutcome } from "./engine/dead-letter.ts";
export type { EnginePhase } from "./engine/engine-context.ts";
export type { FaultHook, FaultPhase } from "./ports/faults.ts";
export type { SweepReport } from "./engine/sweep.ts";
export { SUBAGENT_DEFAULTS, type OnParentTerminal, type SubagentLimits, type SubagentPolicy } from "./agent/subagent-policy.ts";
export { TASK_WAIT_EXPIRED } from "./engine/wake.ts";
export { TASK_TOOL_NAME, taskToolDescription, taskToolSchema, type TaskTarget } from "./drive/task-tool.ts";
export { childAddress, safeCallId, type ChildAddress } from "./conversation/task-names.ts";
export { namesOnlyAgents } from "./agent/names-only-agents.ts";
export type { DispatchResult } from "./engine/admission.ts";
export { DEFAULT_CANCEL_REASON, type CancelResult } from "./engine/cancel.ts";
export { type DispatchRequest, type InstanceAddress, type SessionAddress, type SteerRequest, type SubmissionAddress, type SubmissionListRequest } from "./runtime/requests.ts";
export { ID_RULES } from "./protocol/id-rules.ts";
export { MAX_BODY_BYTES, MAX_CANCEL_REASON_BYTES, DEFAULT_SESSION, SUBMISSION_PAGE } from "./protocol/limits.ts";
export type { AttemptView, SubmissionDetail, SubmissionPage, SubmissionSummary } from "./protocol/submission-view.ts";
export {
  SCHEDULED_TICK,
  scheduleDispatchId,
  scheduledDispatch,
  type ScheduledFiring,
} from "./runtime/scheduled-dispatch.ts";
export { RUNTIME_DEFAULTS, STREAM_MAX_MS } from "./runtime/defaults.ts";
export { createRuntime, type Runtime, type RuntimeConfig } from "./runtime/runtime.ts";
export { InProcessQueue } from "./runtime/in-process-queue.ts";
export * from "./agent/agent-setup.ts";
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
export { clockTool, CLOCK_TOOL_NAME } from "./agent/clock-tool.ts";
export { ModelResolutionError, resolveModel, SUPPORTED_PROVIDERS, type ProviderEnvironment } from "./agent/models.ts";
export * as schema from "./agent/tool-schema.ts";
export { defineTool } from "./agent/define-tool.ts";
export { consoleObserver, consoleTimingInterceptor, type ConsoleLogOptions } from "./logging/console.ts";
