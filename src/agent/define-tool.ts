import type { AgentTool, AgentToolParams, AgentToolResult } from "@earendil-works/pi-agent-core";

/** Where a call of a tool that may need approval is made (what `needsApproval` decides on). */
export interface ApprovalContext {
  agent: string;
  instance: string;
  session: string;
  submissionId: string;
  callId: string;
  toolName: string;
}

/**
 * Whether a call needs a person's approval before it runs (ADR 0025): always, never, or decided
 * per call from its (validated) arguments. A function that throws refuses the call.
 */
export type NeedsApproval<TArgs> = boolean | ((args: TArgs, context: ApprovalContext) => boolean | Promise<boolean>);

/** The options a tool takes beside pi's, for the harness. */
export interface ToolOptions<TArgs> {
  /**
   * The call waits for a person's decision (`approval_requested`; decided with
   * `POST …/submissions/:submissionId/approvals/:callId`): approved, it runs once; denied or
   * expired, the model reads the denial. Other calls of the same batch run meanwhile.
   */
  needsApproval?: NeedsApproval<TArgs>;
  /**
   * How long a call waits for its decision before it is denied ("approval expired"). Default:
   * the agent setup's `approvalTimeoutMs`, else 24 h; never past the submission's budget.
   */
  approvalTimeoutMs?: number;
}

/** A tool as an agent setup lists it: a pi tool, optionally with the harness's options. */
export type HarnessTool<TParameters extends object = any, TDetails = any> = AgentTool<TParameters, TDetails> &
  ToolOptions<AgentToolParams<TParameters>>;

/** What a deferred tool's `start` gets besides the call's arguments. */
export interface CallbackStart {
  /**
   * The callback's id: unguessable (192 random bits), single-use. Hand it to whoever will
   * answer: they `POST /callbacks/<callbackId>` with `{"result": …}` or `{"error": "…"}`.
   */
  callbackId: string;
  /** `/callbacks/<callbackId>`: the route to answer on, relative to the harness's base URL. */
  callbackPath: string;
  callId: string;
  /** Aborted when the run stops (the tool timeout, a cancel, a shutdown). */
  signal?: AbortSignal;
}

/**
 * A deferred tool (ADR 0025): a call runs `start` once, which hands the callback out (to a CI
 * system, an e-mail link, another service), and the run waits — holding nothing — until the
 * callback answers; the answer is the call's outcome. `start` runs after its `callback_started`
 * record is durable, so a call the harness executes again never starts twice.
 */
export interface DeferredToolDefinition<TParameters extends object = any> extends Omit<AgentTool<TParameters, unknown>, "execute"> {
  start: (args: AgentToolParams<TParameters>, callback: CallbackStart) => Promise<void> | void;
  /**
   * How long the call waits for its callback before it is answered "callback expired". Default
   * 24 h; never past the submission's budget.
   */
  callbackTimeoutMs?: number;
}

/** The marker property of a deferred tool (the drive runs `start` instead of `execute`). */
export const DEFERRED = Symbol.for("resolute-harness.deferred-tool");

/** A deferred tool as an agent setup lists it. */
export type DeferredTool<TParameters extends object = any> = HarnessTool<TParameters, unknown> & {
  [DEFERRED]: { start: DeferredToolDefinition<TParameters>["start"]; callbackTimeoutMs?: number };
};

/** The deferred form of `tool`, if it has one. */
export function deferredOf(tool: AgentTool<any>): DeferredTool[typeof DEFERRED] | undefined {
  return (tool as Partial<DeferredTool>)[DEFERRED];
}

/**
 * Returns `tool` as it is, typed: `params` in `execute` (and `args` in `needsApproval`) get the
 * type of the `parameters` schema (built with `schema` from `resolute-harness`, or a TypeBox
 * schema), without writing `AgentTool<typeof parameters>` by hand.
 *
 *   const weather = defineTool({
 *     name: "weather", label: "Weather", description: "Today's weather in a city.",
 *     parameters: schema.obj({ city: schema.str() }),
 *     execute: async (_callId, { city }) => ({ content: [{ type: "text", text: `Sunny in ${city}` }], details: { city } }),
 *   });
 *
 * With `needsApproval` a call waits for a person's decision first; with `start` instead of
 * `execute` the tool is deferred (it waits for a callback: {@link DeferredToolDefinition}).
 */
export function defineTool<TParameters extends object, TDetails = unknown>(
  tool: AgentTool<TParameters, TDetails> & ToolOptions<AgentToolParams<TParameters>>,
): HarnessTool<TParameters, TDetails>;
export function defineTool<TParameters extends object>(tool: DeferredToolDefinition<TParameters>): DeferredTool<TParameters>;
export function defineTool(tool: (AgentTool<any> & ToolOptions<unknown>) | DeferredToolDefinition): HarnessTool | DeferredTool {
  if (!("start" in tool) || typeof tool.start !== "function") return tool as HarnessTool;
  const { start, callbackTimeoutMs, ...rest } = tool;
  return {
    ...rest,
    // Never run by the harness (the drive runs `start`); a plain pi agent cannot wait for a callback.
    execute: async (): Promise<AgentToolResult<unknown>> => {
      throw new Error(`tool ${tool.name} is deferred: it waits for a callback, which only the harness can run`);
    },
    [DEFERRED]: { start, ...(callbackTimeoutMs !== undefined ? { callbackTimeoutMs } : {}) },
  } as DeferredTool;
}
