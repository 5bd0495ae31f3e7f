/**
 * The soak's invariant checker: what must hold after any mix of work, crashes and redeliveries,
 * judged only from what a client can see (the conversation logs read back over HTTP, what live
 * readers saw while it ran) plus the store's rows once the server is stopped.
 */
import type { ConversationRecord } from "../../src/protocol/records.ts";
import type { Submission } from "../../src/store/submission.ts";

/** One session as the soak saw it. */
export interface SessionEvidence {
  /** `agent/instance/session`, for messages. */
  key: string;
  /** Submission ids the server acknowledged (202 or 200), in the order they were admitted. */
  acknowledged: readonly string[];
  /** The whole conversation, read back at the end. */
  log: readonly ConversationRecord[];
  /** What each live reader saw, in the order it saw it (a reader may have started mid-log). */
  live: readonly (readonly ConversationRecord[])[];
  /**
   * POSTs without a dispatch id (a manual compaction) cut off by a crash: each may have been
   * admitted without the client learning its id, so that many unacknowledged settlements are allowed.
   */
  unconfirmed?: number;
  /** Submissions whose cancel the harness answered 200 (settled as cancelled then and there). */
  cancelled?: readonly string[];
}

export interface Evidence {
  sessions: readonly SessionEvidence[];
  /** Every submission row the store still holds unsettled, read after the run (should be none). */
  unsettled: readonly Submission[];
}

/**
 * Every violated invariant, as one line each (empty when all hold):
 * 1. every acknowledged submission settled exactly once, and nothing unacknowledged settled;
 * 2. per session, settlements in admission order (a session is an ordered queue);
 * 3. record ids strictly increase along each log, with no duplicate;
 * 4. no gaps against live readers: what a reader saw is exactly the log's run of records
 *    between the first and last record it saw (nothing skipped, nothing invented, in order);
 * 5. every tool call of a submission's settling attempt has exactly one outcome;
 * 6. the log starts with `conversation_created` (exactly one);
 * 7. no submission left unsettled (no lease held, nothing queued or waiting);
 * 8. a submission whose cancel was answered 200 settled `failed` with code `cancelled`.
 *
 * The subagent invariants (9–15) are `checkSubagents` (`subagent-invariants.ts`).
 */
export function checkInvariants(evidence: Evidence): string[] {
  const violations: string[] = [];
  for (const session of evidence.sessions) checkSession(session, violations);
  for (const sub of evidence.unsettled) {
    violations.push(`${sub.id}: left ${sub.status} after the run${sub.leaseExpiresAt ? " (holding a lease)" : ""}`);
  }
  return violations;
}

/** Invariants 1–6 of one session (a child's session too: `subagent-invariants.ts`), into `violations`. */
export function checkSession(session: SessionEvidence, violations: string[]): void {
  const { key, log } = session;
  const fail = (what: string) => violations.push(`${key}: ${what}`);

  // 3. ids strictly increase.
  for (let i = 1; i < log.length; i++) {
    if (!(log[i]!.id > log[i - 1]!.id)) fail(`record ${log[i]!.id} does not follow ${log[i - 1]!.id} (ids must strictly increase)`);
  }

  // 6. one conversation_created, first.
  const created = log.filter((r) => r.kind === "conversation_created");
  if (log.length > 0 && log[0]!.kind !== "conversation_created") fail(`the log starts with ${log[0]!.kind}, not conversation_created`);
  if (created.length > 1) fail(`${created.length} conversation_created records`);

  // 1. exactly one settlement per acknowledged submission.
  const settled = log.filter((r): r is Extract<ConversationRecord, { kind: "submission_settled" }> => r.kind === "submission_settled");
  const settledCount = new Map<string, number>();
  for (const r of settled) settledCount.set(r.submissionId ?? "", (settledCount.get(r.submissionId ?? "") ?? 0) + 1);
  const acknowledged = new Set(session.acknowledged);
  for (const id of session.acknowledged) {
    const n = settledCount.get(id) ?? 0;
    if (n !== 1) fail(`submission ${id} settled ${n} times`);
  }
  const unacknowledged = [...settledCount.keys()].filter((id) => !acknowledged.has(id));
  for (const id of unacknowledged.slice(session.unconfirmed ?? 0)) fail(`submission ${id} settled but was never acknowledged`);

  // 8. a cancel answered 200 settled the submission as cancelled.
  for (const id of session.cancelled ?? []) {
    const r = settled.find((x) => x.submissionId === id);
    if (r && (r.payload.status !== "failed" || r.payload.errorCode !== "cancelled")) {
      fail(`submission ${id}: its cancel was answered 200, yet it settled ${r.payload.status}${r.payload.errorCode ? `/${r.payload.errorCode}` : ""}`);
    }
  }

  // 2. settlement order = admission order.
  const order = settled.map((r) => r.submissionId ?? "").filter((id) => acknowledged.has(id));
  const expected = session.acknowledged.filter((id) => order.includes(id));
  if (order.join(",") !== expected.join(",")) fail(`settled out of admission order: ${order.join(", ")} (admitted ${expected.join(", ")})`);

  // 4. live readers saw an exact run of the log.
  const position = new Map(log.map((r, i) => [r.id, i] as const));
  session.live.forEach((seen, reader) => {
    if (seen.length === 0) return;
    const start = position.get(seen[0]!.id);
    if (start === undefined) return fail(`live reader ${reader} saw record ${seen[0]!.id}, which is not in the log`);
    for (let i = 0; i < seen.length; i++) {
      const expectedRecord = log[start + i];
      if (expectedRecord?.id !== seen[i]!.id) {
        return fail(`live reader ${reader} saw ${seen[i]!.id} where the log has ${expectedRecord?.id ?? "nothing"} (a skipped, duplicated or reordered record)`);
      }
      if (JSON.stringify(expectedRecord) !== JSON.stringify(seen[i])) return fail(`live reader ${reader} saw record ${seen[i]!.id} with other content than the log holds`);
    }
  });

  // 5. the settling attempt's tool calls each have exactly one outcome.
  for (const r of settled) {
    if (r.attemptId === undefined) continue; // settled without an attempt (never ran)
    const calls = log.filter((c) => c.kind === "assistant_tool_call" && c.submissionId === r.submissionId && c.attemptId === r.attemptId);
    for (const call of calls) {
      if (call.kind !== "assistant_tool_call") continue;
      // A recovered run may ask for the same call id again: count up to the next such call.
      const callId = call.payload.callId;
      let outcomes = 0;
      for (let i = position.get(call.id)! + 1; i < log.length; i++) {
        const next = log[i]!;
        if (next.kind === "assistant_tool_call" && next.payload.callId === callId) break;
        if (next.kind === "tool_outcome" && next.payload.callId === callId) outcomes++;
      }
      if (outcomes !== 1) fail(`tool call ${callId} of submission ${r.submissionId} has ${outcomes} outcomes`);
    }
  }
}
