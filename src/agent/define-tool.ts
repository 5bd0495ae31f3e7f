import type { AgentTool, AgentToolParams, AgentToolResult } from "@earendil-works/pi-agent-core";

/**
 * A tool as an agent setup lists it (ADR 0025): a pi tool, with the harness's options.
 *
 * - `needsApproval`: a call waits for a person's decision before it runs (`approval_requested`;
 *   decided with `POST …/submissions/:submissionId/approvals/:callId`): approved, it runs once;
 *   denied or expired, the model reads the denial. Other calls of the same batch run meanwhile.
 *   `true`, or decided per call from its validated arguments and where it is made; a function
 *   that throws refuses the call (fail closed).
 * - `approvalTimeoutMs`: how long such a call waits before it is denied ("approval expired").
 *   Default: the setup's `approvalTimeoutMs`, else 24 h; never past the submission's budget.
 * - `start` instead of `execute` makes the tool **deferred**: a call runs `start` once, which
 *   hands a callback out (to a CI system, an e-mail link, another service: they
 *   `POST /callbacks/<callbackId>` with `{"result": …}` or `{"error": "…"}`), and the run waits,
 *   holding nothing, until the callback answers; the answer is the call's outcome. `start` runs
 *   after its `callback_started` record is durable, so a call the harness runs again never starts
 *   twice. The callback id is unguessable (192 random bits) and single-use.
 * - `callbackTimeoutMs`: how long a deferred call waits for its callback before it is answered
 *   "callback expired". Default 24 h; never past the submission's budget.
 */
export type HarnessTool<TParameters extends object = any, TDetails = any> = Omit<AgentTool<TParameters, TDetails>, "execute"> & {
  execute?: AgentTool<TParameters, TDetails>["execute"];
  needsApproval?:
    | boolean
    | ((
        args: AgentToolParams<TParameters>,
        where: { agent: string; instance: string; session: string; submissionId: string; callId: string; toolName: string },
      ) => boolean | Promise<boolean>);
  approvalTimeoutMs?: number;
  start?: (
    args: AgentToolParams<TParameters>,
    callback: {
      /** The callback's id: hand it to whoever answers. */
      callbackId: string;
      /** `/callbacks/<callbackId>`: the route to answer on, relative to the harness's base URL. */
      callbackPath: string;
      callId: string;
      /** Aborted when the run stops (the tool timeout, a cancel, a shutdown). */
      signal?: AbortSignal;
    },
  ) => Promise<void> | void;
  callbackTimeoutMs?: number;
};

/** What `needsApproval` decides on besides the arguments: where the call is made. */
export type ApprovalContext = Parameters<Extract<NonNullable<HarnessTool["needsApproval"]>, (...args: any[]) => unknown>>[1];

/** What a deferred tool's `start` gets besides the call's arguments. */
export type CallbackStart = Parameters<NonNullable<HarnessTool["start"]>>[1];

/** The marker property of a deferred tool (the drive runs `start` instead of `execute`). */
const DEFERRED = Symbol.for("resolute-harness.deferred-tool");

/** A deferred tool's `start` and timeout, when `tool` is one (made by `defineTool` with `start`, or listed with `start`). */
export function deferredOf(tool: HarnessTool<any>): { start: NonNullable<HarnessTool["start"]>; callbackTimeoutMs?: number } | undefined {
  const marked = (tool as { [DEFERRED]?: { start: NonNullable<HarnessTool["start"]>; callbackTimeoutMs?: number } })[DEFERRED];
  if (marked) return marked;
  if (typeof tool.start !== "function") return undefined;
  return { start: tool.start, ...(tool.callbackTimeoutMs !== undefined ? { callbackTimeoutMs: tool.callbackTimeoutMs } : {}) };
}

/**
 * Returns `tool` typed: `params` in `execute` (and `args` in `needsApproval` and `start`) get the
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
 * `execute` the tool is deferred: it waits for a callback (see {@link HarnessTool}). A deferred
 * tool's `execute` refuses to run outside the harness.
 */
export function defineTool<TParameters extends object, TDetails = unknown>(tool: HarnessTool<TParameters, TDetails>): HarnessTool<TParameters, TDetails> & Pick<AgentTool<TParameters, TDetails>, "execute"> {
  const deferred = deferredOf(tool);
  if (deferred === undefined) {
    if (typeof tool.execute !== "function") throw new Error(`defineTool: tool ${tool.name} needs execute (or start, for a deferred tool)`);
    return tool as HarnessTool<TParameters, TDetails> & Pick<AgentTool<TParameters, TDetails>, "execute">;
  }
  if (tool.execute !== undefined) throw new Error(`defineTool: tool ${tool.name} has both execute and start: a deferred tool only starts`);
  return {
    ...tool,
    // Never run by the harness (the drive runs `start`); a plain pi agent cannot wait for a callback.
    execute: async (): Promise<AgentToolResult<TDetails>> => {
      throw new Error(`tool ${tool.name} is deferred: it waits for a callback, which only the harness can run`);
    },
    [DEFERRED]: deferred,
  } as HarnessTool<TParameters, TDetails> & Pick<AgentTool<TParameters, TDetails>, "execute">;
}
