/**
 * Approvals and callbacks on the wire (ADR 0025): what `POST …/submissions/{submissionId}/approvals/{callId}`,
 * `GET …/approvals` and `POST /callbacks/{callbackId}` answer, the client returns and `harness`
 * prints. Times are epoch ms.
 */

/** A decision on a call that asked approval, as it stands. */
export interface ApprovalDecision {
  submissionId: string;
  callId: string;
  approved: boolean;
  reason?: string;
  /** Set when nobody decided in time: the expiry denied it. */
  expired?: true;
  /** Who decided (the first decision's principal id, ADR 0043); absent without authentication. */
  decidedBy?: string;
  decidedAt: number;
}

/** A call that waits for a person's decision. */
export interface PendingApproval {
  submissionId: string;
  callId: string;
  toolName: string;
  /** The call's arguments, as the model gave them. */
  args?: unknown;
  /** `<submissionId>/<callId>`. */
  approvalId: string;
  expiresAt: number;
}

/** What `GET /agents/{agent}/{instance}/approvals?session=` answers. */
export interface PendingApprovals {
  approvals: PendingApproval[];
}

/** A callback's answer: its result (any JSON), or an error's text. */
export type CallbackAnswer = { result: unknown; error?: undefined } | { error: string; result?: undefined };

/** What answering a callback came to. */
export interface CallbackResolution {
  status: "answered";
  /** True when this same answer had been given before (nothing changed). */
  replayed: boolean;
}

/**
 * The submission and call an `approvalId` (`<submissionId>/<callId>`) names: what a decision's
 * route takes. A submission id holds no `/` (`ID_RULES.dispatchId`), so the first one splits it.
 * @throws {Error} when `approvalId` is not of that form
 */
export function approvalIdParts(approvalId: string): { submissionId: string; callId: string } {
  const at = approvalId.indexOf("/");
  if (at <= 0 || at === approvalId.length - 1) throw new Error(`not an approval id (<submissionId>/<callId>): ${JSON.stringify(approvalId)}`);
  return { submissionId: approvalId.slice(0, at), callId: approvalId.slice(at + 1) };
}
