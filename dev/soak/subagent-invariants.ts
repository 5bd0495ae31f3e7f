/**
 * The soak's subagent invariants: what must hold for every parent that spawned children through
 * the `task` tool, whatever crashed, was redelivered or cancelled. Judged from public surfaces
 * only: the parent's log and each child's session log read back over HTTP, and each row's status
 * from `GET …/submissions/:id`.
 */
import type { ConversationRecord, SettledPayload, TaskSpawnedPayload } from "../../src/protocol/records.ts";
import { TASK_WAIT_EXPIRED } from "../../src/engine/wake.ts";
import type { SubmissionStatus } from "../../src/store/submission.ts";
import { checkSession, type SessionEvidence } from "./invariants.ts";

/** One child as read back. */
export interface ChildEvidence {
  /** The first `task_spawned` that named it, in its parent's log. */
  spawned: TaskSpawnedPayload;
  /** `agent/instance/session`. */
  key: string;
  /** The child's whole session log. */
  log: readonly ConversationRecord[];
  /** Its row's status (`GET …/submissions/:id`), or `missing` when the harness has no such row. */
  status: SubmissionStatus | "missing";
}

/** One parent (a submission whose log has `task` calls or `task_spawned` records) and its children. */
export interface FamilyEvidence {
  /** The parent's session key. */
  key: string;
  submissionId: string;
  /** The parent's row status at the end. */
  status: SubmissionStatus | "missing";
  children: readonly ChildEvidence[];
  /**
   * Children the harness lists (`GET …/submissions` of the child instance of each of the parent's
   * `task` calls) with this parent as their `parentSubmissionId` but no `task_spawned` in its log.
   */
  untracked?: readonly string[];
}

/** Figures for the report. */
export interface SubagentFigures {
  families: number;
  children: number;
  /** Parents by settlement (`succeeded`, or the failed code). */
  parents: Record<string, number>;
  /** Children by settlement. */
  childOutcomes: Record<string, number>;
}

type Settled = Extract<ConversationRecord, { kind: "submission_settled" }>;

/**
 * Every violated subagent invariant, one line each:
 * 9. each `task` call of a parent (its `task_spawned` records) has exactly one `tool_outcome` in
 *    the parent's log before the parent's `submission_settled`, none after; a parent that settled
 *    failed (cancelled while it waited, say) may have left calls unanswered, never answered twice;
 *    a call re-executed after a crash names the same child;
 * 10. every child settled exactly once (its session's log passes the session invariants 1–6, the
 *     children of that session in their parents' order) and its row is settled: no child of a
 *     settled parent is left queued, running or waiting;
 * 11. no parent left unsettled (waiting, above all);
 * 12. a child ends `cancelled_by_parent` only when its parent settled failed, and then its call has
 *     no outcome; the children of a cancelled parent end `cancelled_by_parent` or settled by
 *     themselves, never `cancelled` (nobody cancels a child directly here);
 * 13. an outcome delivered to the parent agrees with the child's settlement (an error iff the
 *     child failed);
 * 14. a parent spawns only for the `task` calls its own model made (its `assistant_tool_call`
 *     records), every child the harness lists for those calls is in its log, and each `task`
 *     call of a parent that succeeded has a child or an outcome (a refusal);
 * 15. a research request (`research`: the ids the driver sent) that settled succeeded spawned.
 */
export function checkSubagents(sessions: readonly SessionEvidence[], families: readonly FamilyEvidence[], research: readonly string[] = []): string[] {
  const violations: string[] = [];
  const logs = new Map(sessions.map((s) => [s.key, s.log] as const));
  // 10. Each child session as a session of its own. Calls of one parent instance with the same
  // id (a model that reuses ids across submissions) put their children in one session, queued
  // in their parents' order.
  const childSessions = new Map<string, { log: readonly ConversationRecord[]; acknowledged: string[] }>();
  for (const child of families.flatMap((f) => f.children)) {
    const session = childSessions.get(child.key) ?? { log: child.log, acknowledged: [] };
    session.acknowledged.push(child.spawned.childSubmissionId);
    childSessions.set(child.key, session);
  }
  for (const [key, { log, acknowledged }] of childSessions) checkSession({ key, acknowledged, log, live: [] }, violations);
  for (const family of families) {
    const fail = (what: string) => violations.push(`${family.key} parent ${family.submissionId}: ${what}`);
    const log = logs.get(family.key) ?? [];
    const mine = log.filter((r) => r.submissionId === family.submissionId);
    const settledAt = mine.findIndex((r) => r.kind === "submission_settled");
    const settled = (mine[settledAt] as Settled | undefined)?.payload;
    const before = settledAt < 0 ? mine : mine.slice(0, settledAt);
    const after = settledAt < 0 ? [] : mine.slice(settledAt + 1);

    // 11.
    if (family.status !== "settled") fail(`left ${family.status}`);

    // 14.
    const calls = new Set(mine.filter((r) => r.kind === "assistant_tool_call" && r.payload.toolName === "task").map((r) => (r.payload as { callId: string }).callId));
    for (const r of mine) {
      if (r.kind === "task_spawned" && !calls.has(r.payload.callId)) fail(`spawned ${r.payload.childSubmissionId} for call ${r.payload.callId}, which its model never made`);
    }
    for (const id of family.untracked ?? []) fail(`child ${id} is listed with this parent but no task_spawned names it`);
    if (settled?.status === "succeeded") {
      for (const callId of calls) {
        const answered = mine.some((r) => (r.kind === "task_spawned" || r.kind === "tool_outcome") && r.payload.callId === callId);
        if (!answered) fail(`task call ${callId} has neither a child nor an outcome`);
      }
    }

    // 9.
    const spawnedBy = new Map<string, Set<string>>();
    for (const r of mine) {
      if (r.kind !== "task_spawned") continue;
      const ids = spawnedBy.get(r.payload.callId) ?? new Set<string>();
      spawnedBy.set(r.payload.callId, ids.add(r.payload.childSubmissionId));
    }
    const outcomesOf = (records: readonly ConversationRecord[], callId: string) =>
      records.filter((r): r is Extract<ConversationRecord, { kind: "tool_outcome" }> => r.kind === "tool_outcome" && r.payload.callId === callId);
    for (const [callId, children] of spawnedBy) {
      if (children.size !== 1) fail(`task call ${callId} spawned ${children.size} different children`);
      const answered = outcomesOf(before, callId).length;
      const late = outcomesOf(after, callId).length;
      if (late > 0) fail(`task call ${callId} has ${late} outcome(s) after the parent settled`);
      if (answered > 1 || (answered === 0 && settled?.status === "succeeded")) {
        fail(`task call ${callId} has ${answered} outcomes before the parent settled ${settled?.status ?? "(never)"}`);
      }
    }

    for (const child of family.children) {
      const childFail = (what: string) => fail(`child ${child.spawned.childSubmissionId}: ${what}`);
      // 10.
      if (child.status !== "settled") childFail(`left ${child.status} (its parent is ${family.status})`);
      const outcome = (child.log.find((r) => r.kind === "submission_settled" && r.submissionId === child.spawned.childSubmissionId) as Settled | undefined)
        ?.payload;
      if (outcome === undefined) continue;
      // 12.
      const delivered = outcomesOf(before, child.spawned.callId);
      if (outcome.errorCode === "cancelled") childFail("settled cancelled, yet nobody cancelled it directly");
      // A wait that expired answers the call "task wait expired" and then cancels the child.
      const expired = delivered.some((d) => d.payload.content?.some((c) => c.type === "text" && c.text === TASK_WAIT_EXPIRED));
      if (outcome.errorCode === "cancelled_by_parent" && !expired) {
        if (settled?.status !== "failed") childFail(`cancelled_by_parent, yet its parent settled ${settled?.status ?? "(never)"}`);
        if (delivered.length > 0) childFail("cancelled_by_parent, yet its outcome reached the parent");
      }
      // 13.
      for (const d of delivered) {
        if (Boolean(d.payload.isError) !== (outcome.status === "failed")) {
          childFail(`settled ${describe(outcome)}, yet the parent got ${d.payload.isError ? "an error" : "a success"} for call ${d.payload.callId}`);
        }
      }
    }
  }
  // 15.
  const spawning = new Set(families.filter((f) => f.children.length > 0).map((f) => f.submissionId));
  for (const session of sessions) {
    for (const r of session.log) {
      if (r.kind !== "submission_settled" || r.payload.status !== "succeeded" || !research.includes(r.submissionId ?? "")) continue;
      if (!spawning.has(r.submissionId!)) violations.push(`${session.key}: research request ${r.submissionId} settled succeeded without spawning a child`);
    }
  }
  return violations;
}

/** Families, children and how they settled. */
export function subagentFigures(families: readonly FamilyEvidence[], sessions: readonly SessionEvidence[]): SubagentFigures {
  const parents = families.filter((f) => f.children.length > 0);
  const figures: SubagentFigures = { families: parents.length, children: 0, parents: {}, childOutcomes: {} };
  const logs = new Map(sessions.map((s) => [s.key, s.log] as const));
  const count = (into: Record<string, number>, outcome: SettledPayload | undefined) => {
    const k = outcome === undefined ? "unsettled" : outcome.status === "succeeded" ? "succeeded" : (outcome.errorCode ?? "failed");
    into[k] = (into[k] ?? 0) + 1;
  };
  for (const family of parents) {
    count(figures.parents, settlementOf(logs.get(family.key) ?? [], family.submissionId));
    for (const child of family.children) {
      figures.children++;
      count(figures.childOutcomes, settlementOf(child.log, child.spawned.childSubmissionId));
    }
  }
  return figures;
}

function settlementOf(log: readonly ConversationRecord[], submissionId: string): SettledPayload | undefined {
  return (log.find((r) => r.kind === "submission_settled" && r.submissionId === submissionId) as Settled | undefined)?.payload;
}

function describe(outcome: SettledPayload): string {
  return outcome.status === "succeeded" ? "succeeded" : `failed/${outcome.errorCode ?? "?"}`;
}
