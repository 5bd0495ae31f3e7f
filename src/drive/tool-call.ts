import type { AgentTool, AgentToolResult } from "@earendil-works/pi-agent-core";
import { errorText } from "../errors.ts";
import type { FaultPhase } from "../ports/faults.ts";
import type { Correlation, Interceptor } from "../ports/observer.ts";
import { errorResult, type Bounds, type ToolCall } from "./bounds.ts";
import { runInterceptors } from "./interceptors.ts";

/** What a tool call needs from its drive. */
export interface ToolCallContext {
  bounds: Bounds;
  interceptors: readonly Interceptor[];
  /** The current turn's correlation. */
  correlation: () => Correlation;
  /** The run must fail with `error` (an interceptor aborted or threw). */
  fail: (error: string) => void;
  /** The fault seam, bound to the submission (tests only). */
  faults?: (phase: FaultPhase) => void | Promise<void>;
}

/**
 * `tool` as the agent runs it: inside the tool interceptor boundary, bounded by the tool timeout
 * and the run's abort (unless `hold`: see `ToolCall.hold`). The tool's own failure stays a tool
 * error (pi makes it an error result); an interceptor's abort or throw fails the run.
 */
export function boundedTool(tool: AgentTool<any>, ctx: ToolCallContext, options: { hold?: boolean } = {}): AgentTool<any> {
  const faults = ctx.faults;
  const hold = options.hold === true ? { hold: true } : {};
  if (faults) {
    return {
      ...tool,
      execute: async (id, params, signal, onUpdate) => {
        const result = await runTool(ctx, { tool, id, params, signal, onUpdate, ...hold });
        await faults("tool_ran");
        return result;
      },
    };
  }
  return { ...tool, execute: (id, params, signal, onUpdate) => runTool(ctx, { tool, id, params, signal, onUpdate, ...hold }) };
}

async function runTool(ctx: ToolCallContext, call: ToolCall): Promise<AgentToolResult<any>> {
  if (ctx.interceptors.length === 0) return ctx.bounds.runTool(call);
  const { tool, id } = call;
  let result: AgentToolResult<any> | undefined;
  let toolFailed = false;
  let toolError: unknown;
  let ran: boolean;
  try {
    ran = await runInterceptors(
      ctx.interceptors,
      { kind: "tool", correlation: ctx.correlation(), toolName: tool.name, callId: id },
      async () => {
        try {
          result = await ctx.bounds.runTool(call);
        } catch (err) {
          toolFailed = true;
          toolError = err;
          throw err;
        }
      },
    );
  } catch (err) {
    if (toolFailed && err === toolError) throw err; // pi turns it into an error result
    const error = `tool ${tool.name}: ${errorText(err)}`;
    ctx.fail(error);
    return errorResult(error);
  }
  if (!ran) {
    const error = `tool call ${tool.name} (${id}) aborted by an interceptor`;
    ctx.fail(error);
    return errorResult(error);
  }
  if (toolFailed) throw toolError; // an interceptor swallowed the tool's error
  return result!;
}
