import { ClaimLost, SubmissionNotFound } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { Attempt, Cancellation, SubmissionStatus } from "../store/submission.ts";
import { MemoryAttachments } from "./attachments.ts";
import { MemoryCallWaits } from "./call-waits.ts";
import { MemoryConversationLog } from "./conversation-log.ts";
import { type Row, STATUSES } from "./rows.ts";

/**
 * Everything a {@link MemoryStore} holds, shared by its parts (submissions, call answers, inbox,
 * deletion), with the lookups and the one status transition they all use. One object so that each
 * part's check-and-write stays a single synchronous step over the same maps.
 */
export class MemoryState {
  readonly clock: Clock;
  /** The next admission's place in the order (see {@link Row.seq}). */
  seq = 0;
  readonly rows = new Map<string, Row>();
  /** Per session (see `sessionId`), its unsettled submissions in admission order: [0] is the head. */
  readonly sessions = new Map<string, Row[]>();
  /** Per session, every submission in admission order (the operator's listing). */
  readonly history = new Map<string, Row[]>();
  readonly byStatus = new Map<SubmissionStatus, Set<Row>>(STATUSES.map((s) => [s, new Set<Row>()]));
  readonly children = new Map<string, Row[]>();
  readonly attempts = new Map<string, Attempt[]>();
  readonly log: MemoryConversationLog;
  readonly attachments = new MemoryAttachments();
  readonly callWaits = new MemoryCallWaits();
  /** Sessions (see `sessionId`) marked for deletion (`reserveDeletion`): admission refuses them. */
  readonly deleting = new Set<string>();

  constructor(clock: Clock) {
    this.clock = clock;
    this.log = new MemoryConversationLog(clock, ({ submissionId, attemptId, onCancel }) => {
      const sub = this.rows.get(submissionId)?.sub;
      const holds = sub !== undefined && sub.status === "running" && sub.attemptId === attemptId;
      if (holds && sub.cancelRequested) onCancel?.(sub.cancellation ?? DEFAULT_CANCELLATION);
      return holds;
    });
  }

  row(id: string): Row {
    const row = this.rows.get(id);
    if (!row) throw new SubmissionNotFound(id);
    return row;
  }

  /** The row, when it is running under `attemptId`; else `ClaimLost`. */
  owned(id: string, attemptId: string, op: string): Row {
    const row = this.row(id);
    if (row.sub.status !== "running") throw new ClaimLost(`${op}: submission ${id} is ${row.sub.status}, not running`);
    if (row.sub.attemptId !== attemptId) {
      throw new ClaimLost(`${op}: submission ${id} is held by attempt ${row.sub.attemptId}, not ${attemptId}`);
    }
    return row;
  }

  transition(row: Row, status: SubmissionStatus): void {
    this.byStatus.get(row.sub.status)!.delete(row);
    this.byStatus.get(status)!.add(row);
    row.sub.status = status;
    row.sub.updatedAt = this.clock.now();
    if (status === "settled") {
      const rows = this.sessions.get(row.session);
      if (rows) {
        const at = rows.indexOf(row);
        if (at >= 0) rows.splice(at, 1);
        if (rows.length === 0) this.sessions.delete(row.session);
        // The next one became the head: a transition the sweeper measures staleness from.
        else if (at === 0) rows[0]!.sub.updatedAt = row.sub.updatedAt;
      }
    }
  }
}

/** The cancellation of a row flagged without one (written before cancellations were stored). */
const DEFAULT_CANCELLATION: Cancellation = { errorCode: "cancelled", error: "cancelled: cancelled by request" };
