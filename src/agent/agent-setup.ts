import type { AgentTool, StreamFn, ThinkingLevel } from "@earendil-works/pi-agent-core";
import type { Api, Model } from "@earendil-works/pi-ai";
import { deferredOf, type HarnessTool } from "./define-tool.ts";
import { isMcpToolset, type McpToolset } from "./mcp-tools.ts";

// The pi types an agent definition needs, re-exported so nothing outside `src/drive` imports
// `@earendil-works/*` directly (the pi API churns; this layer absorbs it).
export type { AgentTool, AgentToolResult, StreamFn, ThinkingLevel } from "@earendil-works/pi-agent-core";
export type { Api, AssistantMessage, Model } from "@earendil-works/pi-ai";

/** Attempts a submission may be charged before it settles `attempt_budget_exhausted`. */
export const DEFAULT_MAX_ATTEMPTS = 10;
/**
 * Durability budget of a submission, from admission, for an agent whose tools never wait. An
 * agent with a tool that waits for a person or a callback gets this plus its longest wait by
 * default ({@link agentBudgets}, ADR 0025).
 */
export const DEFAULT_SUBMISSION_TIMEOUT_MS = 60 * 60 * 1000;
/** One model round-trip; well inside one Lambda invocation (15 min). */
export const DEFAULT_TURN_TIMEOUT_MS = 10 * 60 * 1000;
/** One tool call; well inside one Lambda invocation (15 min). */
export const DEFAULT_TOOL_TIMEOUT_MS = 10 * 60 * 1000;
/** How long a call that needs approval waits for a decision (bounded by the submission's budget). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** How long a deferred tool's call waits for its callback (bounded by the submission's budget). */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/**
 * What an agent definition's initializer returns for one submission: the model, how to reach
 * it, and the knobs of one run. Budgets are per agent; zero or absent means the default.
 */
export interface AgentSetup {
  model: Model<Api>;
  /** How the model is called (`resolveModel(...).streamFn`, `localModel().streamFn`, ...). */
  streamFn: StreamFn;
  systemPrompt?: string;
  /**
   * pi tools, with the harness's `needsApproval` (ADR 0025) where a call waits for a person;
   * deferred tools (`defineTool({start})`) wait for a callback; an MCP server's tools
   * (`mcpTools(...)` from `resolute-harness/mcp`, ADR 0050), read at the start of each attempt.
   */
  tools?: Array<HarnessTool<any> | McpToolset>;
  thinkingLevel?: ThinkingLevel;
  /** 0 or absent → {@link DEFAULT_MAX_ATTEMPTS}. */
  maxAttempts?: number;
  /**
   * Durability budget from admission; it bounds every wait of the submission too. 0 or absent →
   * {@link DEFAULT_SUBMISSION_TIMEOUT_MS} (1 h) plus the longest wait of the setup's tools (an
   * approval's or a callback's timeout, 24 h by default): a waiting tool's default wait is never
   * cut short by the default budget.
   */
  submissionTimeoutMs?: number;
  /** Bound on one model turn; 0 or absent → {@link DEFAULT_TURN_TIMEOUT_MS}. */
  turnTimeoutMs?: number;
  /** Bound on one tool call (a timed-out call yields an error outcome); 0 or absent → default. */
  toolTimeoutMs?: number;
  /**
   * How long a call that needs approval waits for its decision when its tool sets none; 0 or
   * absent → {@link DEFAULT_APPROVAL_TIMEOUT_MS}. Never past the submission's budget
   * (`submissionTimeoutMs`, from admission), whose default grows to cover it.
   */
  approvalTimeoutMs?: number;
  /** How the conversation is compacted when it outgrows the model's context window. */
  compaction?: CompactionSetup;
}

/** Compaction knobs of an agent setup; every field is optional (0 or absent → default). */
export interface CompactionSetup {
  /** Tokens of the most recent history kept verbatim (default 20,000). */
  keepRecentTokens?: number;
  /** Room kept free for the reply: a context passing `contextWindow − reserveTokens` compacts first (default 16,384). */
  reserveTokens?: number;
  /** The summarizer's model (default: the agent's own); `streamFn` with it when it needs another provider. */
  model?: Model<Api>;
  streamFn?: StreamFn;
}

/** An agent definition returned an unusable setup. The message says what and where. */
export class AgentSetupError extends Error {
  constructor(message: string) {
    super(`invalid agent setup: ${message}`);
    this.name = "AgentSetupError";
  }
}

const THINKING_LEVELS: readonly string[] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/**
 * Checks a setup returned by an initializer (which is user code, possibly plain JavaScript) and
 * throws {@link AgentSetupError} naming the first problem.
 */
export function validateAgentSetup(setup: unknown): asserts setup is AgentSetup {
  if (setup === null || typeof setup !== "object") throw new AgentSetupError("expected an object");
  const s = setup as Record<string, unknown>;
  const model = s.model as Record<string, unknown> | undefined;
  if (model === null || typeof model !== "object") throw new AgentSetupError("model is required");
  for (const field of ["id", "api", "provider"] as const) {
    if (typeof model[field] !== "string" || model[field] === "") {
      throw new AgentSetupError(`model.${field} must be a non-empty string`);
    }
  }
  if (typeof s.streamFn !== "function") throw new AgentSetupError("streamFn must be a function");
  if (s.systemPrompt !== undefined && typeof s.systemPrompt !== "string") {
    throw new AgentSetupError("systemPrompt must be a string");
  }
  if (s.thinkingLevel !== undefined && !THINKING_LEVELS.includes(s.thinkingLevel as string)) {
    throw new AgentSetupError(`thinkingLevel must be one of ${THINKING_LEVELS.join(", ")}`);
  }
  if (s.tools !== undefined) {
    if (!Array.isArray(s.tools)) throw new AgentSetupError("tools must be an array");
    const names = new Set<string>();
    s.tools.forEach((tool: unknown, i) => {
      // Checked when made (`mcpTools`); its tools' names are checked when the attempt lists them.
      if (isMcpToolset(tool)) return;
      const t = tool as Record<string, unknown> | null;
      if (t === null || typeof t !== "object") throw new AgentSetupError(`tools[${i}] must be an object`);
      if (typeof t.name !== "string" || t.name === "") {
        throw new AgentSetupError(`tools[${i}].name must be a non-empty string`);
      }
      if (names.has(t.name)) throw new AgentSetupError(`duplicate tool name "${t.name}"`);
      names.add(t.name);
      if (typeof t.execute !== "function" && typeof t.start !== "function") {
        throw new AgentSetupError(`tool "${t.name}": execute must be a function (or start, for a deferred tool)`);
      }
      if (t.parameters === null || typeof t.parameters !== "object") {
        throw new AgentSetupError(`tool "${t.name}": parameters must be a JSON Schema object`);
      }
      if (t.needsApproval !== undefined && typeof t.needsApproval !== "boolean" && typeof t.needsApproval !== "function") {
        throw new AgentSetupError(`tool "${t.name}": needsApproval must be a boolean or a function`);
      }
      const deferred = deferredOf(t as unknown as HarnessTool);
      if (deferred !== undefined && t.needsApproval !== undefined) {
        throw new AgentSetupError(`tool "${t.name}": a deferred tool (start) cannot also need approval`);
      }
      for (const [knob, v] of [["approvalTimeoutMs", t.approvalTimeoutMs], ["callbackTimeoutMs", deferred?.callbackTimeoutMs]] as const) {
        if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < 0)) {
          throw new AgentSetupError(`tool "${t.name}": ${knob} must be a finite number >= 0`);
        }
      }
    });
  }
  for (const knob of ["maxAttempts", "submissionTimeoutMs", "turnTimeoutMs", "toolTimeoutMs", "approvalTimeoutMs"] as const) {
    const v = s[knob];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new AgentSetupError(`${knob} must be a finite number >= 0`);
    }
    if (knob === "maxAttempts" && !Number.isInteger(v)) throw new AgentSetupError("maxAttempts must be an integer");
  }
  if (s.compaction !== undefined) validateCompaction(s.compaction, s.model as Record<string, unknown>);
}

function validateCompaction(compaction: unknown, agentModel: Record<string, unknown>): void {
  if (compaction === null || typeof compaction !== "object") throw new AgentSetupError("compaction must be an object");
  const c = compaction as Record<string, unknown>;
  for (const knob of ["keepRecentTokens", "reserveTokens"] as const) {
    const v = c[knob];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new AgentSetupError(`compaction.${knob} must be an integer >= 0`);
  }
  if (c.model !== undefined) {
    const model = c.model as Record<string, unknown> | null;
    if (model === null || typeof model !== "object") throw new AgentSetupError("compaction.model must be a model object");
    for (const field of ["id", "api", "provider"] as const) {
      if (typeof model[field] !== "string" || model[field] === "") {
        throw new AgentSetupError(`compaction.model.${field} must be a non-empty string`);
      }
    }
  }
  if (c.streamFn !== undefined && typeof c.streamFn !== "function") throw new AgentSetupError("compaction.streamFn must be a function");
  // The summarizer must fit inside the window it summarizes for.
  const window = typeof agentModel.contextWindow === "number" ? agentModel.contextWindow : 0;
  const reserve = typeof c.reserveTokens === "number" ? c.reserveTokens : 0;
  if (window > 0 && reserve >= window) throw new AgentSetupError(`compaction.reserveTokens (${reserve}) must be below the model's contextWindow (${window})`);
}

/**
 * The setup's own tools: all but its MCP toolsets (which the drive replaces by their servers'
 * tools when an attempt starts, so a drive's setup has none left).
 */
export function localToolsOf(setup: Pick<AgentSetup, "tools">): HarnessTool<any>[] {
  return (setup.tools ?? []).filter((t): t is HarnessTool<any> => !isMcpToolset(t));
}

/** The setup's budgets with defaults applied. */
export interface AgentBudgets {
  maxAttempts: number;
  submissionTimeoutMs: number;
  turnTimeoutMs: number;
  toolTimeoutMs: number;
}

/**
 * Applies the defaults (0 or absent → default). The default submission budget is
 * {@link DEFAULT_SUBMISSION_TIMEOUT_MS} plus {@link longestToolWaitMs}: a submission may wait as
 * long as its longest wait allows and still have the default hour to run. An explicit budget
 * stands as given and bounds every wait.
 */
export function agentBudgets(setup: AgentSetup): AgentBudgets {
  return {
    maxAttempts: setup.maxAttempts || DEFAULT_MAX_ATTEMPTS,
    submissionTimeoutMs: setup.submissionTimeoutMs || DEFAULT_SUBMISSION_TIMEOUT_MS + longestToolWaitMs(setup),
    turnTimeoutMs: setup.turnTimeoutMs || DEFAULT_TURN_TIMEOUT_MS,
    toolTimeoutMs: setup.toolTimeoutMs || DEFAULT_TOOL_TIMEOUT_MS,
  };
}

/**
 * The longest one call of the setup's tools may wait: the largest approval timeout among tools
 * with `needsApproval` (a function counts: it may ask) and callback timeout among deferred tools,
 * defaults applied; 0 when no tool waits.
 */
export function longestToolWaitMs(setup: Pick<AgentSetup, "tools" | "approvalTimeoutMs">): number {
  let longest = 0;
  for (const tool of setup.tools ?? []) {
    if (isMcpToolset(tool)) {
      const asks = tool.options.needsApproval;
      if (asks !== undefined && asks !== false && !(Array.isArray(asks) && asks.length === 0)) {
        longest = Math.max(longest, tool.options.approvalTimeoutMs || setup.approvalTimeoutMs || DEFAULT_APPROVAL_TIMEOUT_MS);
      }
      continue;
    }
    const deferred = deferredOf(tool);
    if (deferred !== undefined) longest = Math.max(longest, deferred.callbackTimeoutMs || DEFAULT_CALLBACK_TIMEOUT_MS);
    else if (tool.needsApproval !== undefined && tool.needsApproval !== false) {
      longest = Math.max(longest, tool.approvalTimeoutMs || setup.approvalTimeoutMs || DEFAULT_APPROVAL_TIMEOUT_MS);
    }
  }
  return longest;
}
