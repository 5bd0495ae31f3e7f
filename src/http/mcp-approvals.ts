/**
 * Approvals asked through MCP elicitation (ADR 0051). A task waiting on a person's decision is
 * `input_required`; `tasks/result` then sends the client one `elicitation/create` request per
 * pending call, whose JSON-RPC id names the submission and the call. The client's answer arrives
 * as a POST of its own, on whatever instance the load balancer picks: the id alone says what
 * to decide, so no instance has to remember it asked.
 */

/** The JSON-RPC id prefix of the elicitation requests that ask approvals. */
export const MCP_APPROVAL_ID_PREFIX = "resolute-harness/approval:";

/** The meta key MCP uses to tie a message to its task. */
export const MCP_RELATED_TASK_META = "io.modelcontextprotocol/related-task";

/** One call waiting on a person's decision. */
export interface PendingApproval {
  submissionId: string;
  callId: string;
  toolName: string;
  args?: unknown;
}

/** The id of the elicitation request asking to decide this call. */
export function approvalRequestId(submissionId: string, callId: string): string {
  return MCP_APPROVAL_ID_PREFIX + JSON.stringify([submissionId, callId]);
}

/** The submission and call an elicitation answer is for, or `undefined` for an id not of ours. */
export function approvalOfRequestId(id: unknown): { submissionId: string; callId: string } | undefined {
  if (typeof id !== "string" || !id.startsWith(MCP_APPROVAL_ID_PREFIX)) return undefined;
  try {
    const value = JSON.parse(id.slice(MCP_APPROVAL_ID_PREFIX.length)) as unknown;
    if (!Array.isArray(value) || value.length !== 2 || !value.every((v) => typeof v === "string" && v !== "")) return undefined;
    return { submissionId: value[0] as string, callId: value[1] as string };
  } catch {
    return undefined;
  }
}

/** The `elicitation/create` request (form mode) asking a person to decide one call. */
export function approvalElicitation(pending: PendingApproval): { jsonrpc: "2.0"; id: string; method: "elicitation/create"; params: Record<string, unknown> } {
  const args = pending.args === undefined ? "" : JSON.stringify(pending.args);
  const shown = args.length > 500 ? `${args.slice(0, 500)}…` : args;
  return {
    jsonrpc: "2.0",
    id: approvalRequestId(pending.submissionId, pending.callId),
    method: "elicitation/create",
    params: {
      mode: "form",
      message: `The agent asks to run ${pending.toolName}(${shown}). Approve?`,
      requestedSchema: {
        type: "object",
        properties: {
          approved: { type: "boolean", title: "Approve", description: `Run ${pending.toolName} as asked` },
          reason: { type: "string", title: "Reason", description: "Told to the agent (optional)" },
        },
        required: ["approved"],
      },
      _meta: { [MCP_RELATED_TASK_META]: { taskId: pending.submissionId } },
    },
  };
}

/**
 * The decision an elicitation result carries: `accept` with `approved` is that decision,
 * `decline` denies; `cancel` (the person closed the form) and anything else decide nothing, so
 * the call keeps waiting.
 */
export function decisionOfElicitation(result: unknown): { approved: boolean; reason?: string } | undefined {
  if (result === null || typeof result !== "object") return undefined;
  const { action, content } = result as { action?: unknown; content?: unknown };
  if (action === "decline") return { approved: false, reason: "declined through MCP elicitation" };
  if (action !== "accept" || content === null || typeof content !== "object") return undefined;
  const { approved, reason } = content as { approved?: unknown; reason?: unknown };
  if (typeof approved !== "boolean") return undefined;
  return typeof reason === "string" && reason !== "" ? { approved, reason } : { approved };
}
