/**
 * MCP tasks are submissions (ADR 0051): the task id is the submission id and its status is read
 * from the stored row, so any instance answers `tasks/get` and nothing lives in memory.
 */
import type { SubmissionSummary } from "../protocol/submission-view.ts";

/** MCP's task statuses (spec 2025-11-25). */
export type McpTaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** A task as `tasks/get`, `tasks/list` and a task-augmented `tools/call` answer it. */
export interface McpTask {
  taskId: string;
  status: McpTaskStatus;
  /** Kept as long as its conversation: no expiry of its own. */
  ttl: null;
  createdAt: string;
  lastUpdatedAt: string;
  pollInterval: number;
  statusMessage?: string;
  [key: string]: unknown;
}

/** How often a client is told to poll a task. */
export const MCP_TASK_POLL_MS = 1_000;

/**
 * A submission's task status: queued, running and settling are `working`; waiting on a person's
 * approval is `input_required` (waiting on a child, a callback or a time stays `working`); settled
 * is `completed` or `failed`, or `cancelled` for a cancel (its own or its parent's).
 */
export function taskStatusOf(sub: Pick<SubmissionSummary, "status" | "outcome" | "waitingFor">): McpTaskStatus {
  if (sub.status === "settled") {
    const code = sub.outcome?.errorCode;
    if (code === "cancelled" || code === "cancelled_by_parent") return "cancelled";
    return sub.outcome?.status === "succeeded" ? "completed" : "failed";
  }
  if (sub.status === "waiting" && (sub.waitingFor ?? []).some((entry) => entry.kind === "approval")) return "input_required";
  return "working";
}

/** The task of a submission. */
export function taskOf(sub: SubmissionSummary): McpTask {
  const status = taskStatusOf(sub);
  const task: McpTask = {
    taskId: sub.id,
    status,
    ttl: null,
    createdAt: new Date(sub.createdAt).toISOString(),
    lastUpdatedAt: new Date(sub.updatedAt).toISOString(),
    pollInterval: MCP_TASK_POLL_MS,
  };
  const message = statusMessageOf(sub, status);
  if (message !== undefined) task.statusMessage = message;
  return task;
}

function statusMessageOf(sub: SubmissionSummary, status: McpTaskStatus): string | undefined {
  if (status === "input_required") {
    const tools = (sub.waitingFor ?? []).flatMap((entry) => (entry.kind === "approval" ? [entry.toolName] : []));
    return `waiting for approval of ${tools.join(", ")}: call tasks/result to be asked`;
  }
  if (status === "failed" || status === "cancelled") return sub.outcome?.error;
  if (sub.cancelRequested) return "cancelling";
  return undefined;
}

/** Where `tasks/list` goes on: the index of the agent listed, and the submission after which its page starts. */
export interface McpTaskCursor {
  agent: number;
  after?: string;
}

/** A cursor as the client passes it back (opaque to it). */
export function encodeTaskCursor(cursor: McpTaskCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

/** The cursor a client passed, or `undefined` when it is not one of ours. */
export function decodeTaskCursor(text: string): McpTaskCursor | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (value === null || typeof value !== "object") return undefined;
    const { agent, after } = value as Record<string, unknown>;
    if (!Number.isSafeInteger(agent) || (agent as number) < 0) return undefined;
    if (after !== undefined && typeof after !== "string") return undefined;
    return { agent: agent as number, ...(after !== undefined ? { after } : {}) };
  } catch {
    return undefined;
  }
}
