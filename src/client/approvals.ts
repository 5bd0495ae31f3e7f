import type { ApprovalDecision, CallbackAnswer, CallbackResolution, PendingApproval } from "../protocol/approvals.ts";
import { HarnessHttpError } from "./http-error.ts";

/** Options of {@link ApprovalMethods.approve} and {@link ApprovalMethods.deny}. */
export interface DecisionOptions {
  /** Why; the model reads it (a denial: "denied by a reviewer: <reason>"). At most 4 KB. */
  reason?: string;
  signal?: AbortSignal;
}

/** Options of {@link ApprovalMethods.pendingApprovals}. */
export interface PendingApprovalsOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  signal?: AbortSignal;
}

/** The client's part for durable waits (ADR 0025): decisions on tool calls, callbacks. */
export interface ApprovalMethods {
  /**
   * Approves a call that asked approval: it runs once and the run goes on. The same decision
   * again answers it again.
   * @throws {HarnessHttpError} 409 `already_decided` (another decision stands), `approval_not_requested`,
   * `already_settled`; 404 `submission_not_found`, `call_not_found`; 400 `invalid_request`
   */
  approve(agent: string, instance: string, submissionId: string, callId: string, options?: DecisionOptions): Promise<ApprovalDecision>;
  /** Denies a call that asked approval: nothing runs, the model reads the denial (see {@link approve}). */
  deny(agent: string, instance: string, submissionId: string, callId: string, options?: DecisionOptions): Promise<ApprovalDecision>;
  /** The calls the session waits on a person's decision for. */
  pendingApprovals(agent: string, instance: string, options?: PendingApprovalsOptions): Promise<PendingApproval[]>;
  /**
   * Answers a deferred tool's callback (`{result}` or `{error}`): the waiting call's outcome.
   * @throws {HarnessHttpError} 404 `callback_not_found` (unknown, closed or expired), 409 `already_answered`
   */
  resolveCallback(callbackId: string, answer: CallbackAnswer, options?: { signal?: AbortSignal }): Promise<CallbackResolution>;
}

type Send = (method: "GET" | "POST", url: string, init: { body?: unknown; signal?: AbortSignal }) => Promise<Response>;

/** The methods over the client's `send` (headers, signing) and its URLs. */
export function approvalMethods(send: Send, baseUrl: string, agentUrl: (agent: string, instance: string, suffix?: string) => string): ApprovalMethods {
  const json = async <T>(res: Response, check: (v: Record<string, unknown>) => boolean): Promise<T> => {
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    let value: unknown;
    try {
      value = JSON.parse(await res.text());
    } catch {
      throw new HarnessHttpError(res.status, "unexpected_response", "expected a JSON object");
    }
    if (value === null || typeof value !== "object" || !check(value as Record<string, unknown>)) {
      throw new HarnessHttpError(res.status, "unexpected_response", "unexpected answer");
    }
    return value as T;
  };
  const decide = async (agent: string, instance: string, submissionId: string, callId: string, approved: boolean, opts: DecisionOptions) => {
    const url = agentUrl(agent, instance, `/submissions/${encodeURIComponent(submissionId)}/approvals/${encodeURIComponent(callId)}`);
    const body = opts.reason === undefined ? { approved } : { approved, reason: opts.reason };
    return json<ApprovalDecision>(await send("POST", url, { body, signal: opts.signal }), (v) => typeof v.approved === "boolean");
  };
  return {
    approve: (agent, instance, submissionId, callId, opts = {}) => decide(agent, instance, submissionId, callId, true, opts),
    deny: (agent, instance, submissionId, callId, opts = {}) => decide(agent, instance, submissionId, callId, false, opts),
    async pendingApprovals(agent, instance, opts = {}) {
      const qs = opts.session === undefined ? "" : `?session=${encodeURIComponent(opts.session)}`;
      const page = await json<{ approvals: PendingApproval[] }>(await send("GET", agentUrl(agent, instance, `/approvals${qs}`), { signal: opts.signal }), (v) =>
        Array.isArray(v.approvals),
      );
      return page.approvals;
    },
    async resolveCallback(callbackId, answer, opts = {}) {
      const res = await send("POST", `${baseUrl}/callbacks/${encodeURIComponent(callbackId)}`, { body: answer, signal: opts.signal });
      return json<CallbackResolution>(res, (v) => v.status === "answered");
    },
  };
}
