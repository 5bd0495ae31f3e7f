import { describe, expect, it } from "vitest";
import type { ConversationRecord, RecordKind, RecordPayloads, SettledPayload } from "../../../../src/protocol/records.ts";
import type { SessionEvidence } from "../../../../dev/soak/invariants.ts";
import { checkSubagents, subagentFigures, type FamilyEvidence } from "../../../../dev/soak/subagent-invariants.ts";

let n = 0;
function r<K extends RecordKind>(kind: K, payload: RecordPayloads[K], extra: Partial<ConversationRecord> = {}): ConversationRecord {
  n++;
  return { id: `R${String(n).padStart(6, "0")}`, kind, conversationId: "c", session: "default", time: "t", payload, ...extra } as ConversationRecord;
}

const spawned = (k: number) => ({
  callId: `call_${k}`,
  agent: "researcher",
  childInstance: `i:call_${k}-h`,
  childConversationId: `cc${k}`,
  childSubmissionId: `p1:call_${k}-h`,
  prompt: "look",
});

function childLog(k: number, outcome: SettledPayload): ConversationRecord[] {
  const sub = { submissionId: `p1:call_${k}-h`, session: `task-call_${k}-h` };
  return [
    r("conversation_created", { agent: "researcher", instance: `i:call_${k}-h`, session: `task-call_${k}-h` }, { session: sub.session }),
    r("user_message", { body: "look" }, sub),
    r("submission_settled", outcome, sub),
  ];
}

/** A parent that spawned two children, both settled, both outcomes delivered, then settled succeeded. */
function healthy(): { sessions: SessionEvidence[]; families: FamilyEvidence[] } {
  n = 0;
  const p = { submissionId: "p1", attemptId: "a1" };
  const children = [0, 1].map((k) => ({ spawned: spawned(k), key: `researcher/i:call_${k}-h/task-call_${k}-h`, log: childLog(k, { status: "succeeded" }), status: "settled" as const }));
  const log = [
    r("conversation_created", { agent: "assistant", instance: "i", session: "default" }),
    r("user_message", { body: "research 2" }, p),
    r("assistant_tool_call", { callId: "call_0", toolName: "task" }, p),
    r("assistant_tool_call", { callId: "call_1", toolName: "task" }, p),
    r("task_spawned", spawned(0), p),
    r("task_spawned", spawned(1), p),
    r("tool_outcome", { callId: "call_1", toolName: "task", content: [{ type: "text", text: "notes" }] }, { submissionId: "p1" }),
    r("tool_outcome", { callId: "call_0", toolName: "task", content: [{ type: "text", text: "notes" }] }, { submissionId: "p1" }),
    r("submission_settled", { status: "succeeded" }, { submissionId: "p1", attemptId: "a2" }),
  ];
  return {
    sessions: [{ key: "assistant/i/default", acknowledged: ["p1"], log, live: [] }],
    families: [{ key: "assistant/i/default", submissionId: "p1", status: "settled", children }],
  };
}

const settledAt = (log: readonly ConversationRecord[]) => log.findIndex((x) => x.kind === "submission_settled");

describe("soak subagent invariants", () => {
  it("hold for a healthy family, and count it", () => {
    const { sessions, families } = healthy();
    expect(checkSubagents(sessions, families)).toEqual([]);
    expect(subagentFigures(families, sessions)).toEqual({ families: 1, children: 2, parents: { succeeded: 1 }, childOutcomes: { succeeded: 2 } });
  });

  it("catch a task call answered twice, not at all, or after its parent settled", () => {
    const twice = healthy();
    const log = [...twice.sessions[0]!.log];
    log.splice(settledAt(log), 0, r("tool_outcome", { callId: "call_0", toolName: "task" }, { submissionId: "p1" }));
    twice.sessions[0]!.log = log;
    expect(checkSubagents(twice.sessions, twice.families).join("\n")).toContain("task call call_0 has 2 outcomes before the parent settled succeeded");

    const unanswered = healthy();
    unanswered.sessions[0]!.log = unanswered.sessions[0]!.log.filter((x) => !(x.kind === "tool_outcome" && x.payload.callId === "call_1"));
    expect(checkSubagents(unanswered.sessions, unanswered.families).join("\n")).toContain("task call call_1 has 0 outcomes before the parent settled succeeded");

    const late = healthy();
    const moved = late.sessions[0]!.log.filter((x) => !(x.kind === "tool_outcome" && x.payload.callId === "call_1"));
    late.sessions[0]!.log = [...moved, r("tool_outcome", { callId: "call_1", toolName: "task" }, { submissionId: "p1" })];
    expect(checkSubagents(late.sessions, late.families).join("\n")).toContain("task call call_1 has 1 outcome(s) after the parent settled");
  });

  it("let a parent that settled failed leave its calls unanswered", () => {
    const cancelled = healthy();
    cancelled.sessions[0]!.log = cancelled.sessions[0]!.log
      .filter((x) => x.kind !== "tool_outcome")
      .map((x) => (x.kind === "submission_settled" ? ({ ...x, payload: { status: "failed", errorCode: "cancelled" } } as ConversationRecord) : x));
    for (const child of cancelled.families[0]!.children) {
      child.log = childLog(Number(child.spawned.callId.slice(-1)), { status: "failed", errorCode: "cancelled_by_parent" });
    }
    expect(checkSubagents(cancelled.sessions, cancelled.families)).toEqual([]);
  });

  it("catch a child or a parent left unsettled, and a child settled twice", () => {
    const stuck = healthy();
    stuck.families[0]!.status = "waiting";
    (stuck.families[0]!.children[1] as { status: string }).status = "running";
    const twice = stuck.families[0]!.children[0]!;
    twice.log = [...twice.log, r("submission_settled", { status: "succeeded" }, { submissionId: twice.spawned.childSubmissionId })];
    const violations = checkSubagents(stuck.sessions, stuck.families).join("\n");
    expect(violations).toContain("parent p1: left waiting");
    expect(violations).toContain("child p1:call_1-h: left running");
    expect(violations).toContain("submission p1:call_0-h settled 2 times");
  });

  it("catch a child cancelled_by_parent under a parent that succeeded, or whose outcome the parent got; and an outcome that disagrees", () => {
    const wrong = healthy();
    wrong.families[0]!.children[0]!.log = childLog(0, { status: "failed", errorCode: "cancelled_by_parent" });
    wrong.families[0]!.children[1]!.log = childLog(1, { status: "failed", errorCode: "run_failed" });
    const violations = checkSubagents(wrong.sessions, wrong.families).join("\n");
    expect(violations).toContain("child p1:call_0-h: cancelled_by_parent, yet its parent settled succeeded");
    expect(violations).toContain("child p1:call_0-h: cancelled_by_parent, yet its outcome reached the parent");
    expect(violations).toContain("child p1:call_1-h: settled failed/run_failed, yet the parent got a success for call call_1");
  });

  it("catch a spawn for a call the parent's model never made, a child the harness lists but the log does not name, and a research request that never spawned", () => {
    const foreign = healthy();
    foreign.sessions[0]!.log = foreign.sessions[0]!.log.filter((x) => !(x.kind === "assistant_tool_call" && x.payload.callId === "call_1"));
    expect(checkSubagents(foreign.sessions, foreign.families).join("\n")).toContain("spawned p1:call_1-h for call call_1, which its model never made");

    const untracked = healthy();
    untracked.families[0]!.untracked = ["p1:call_9-h"];
    expect(checkSubagents(untracked.sessions, untracked.families).join("\n")).toContain("child p1:call_9-h is listed with this parent but no task_spawned names it");

    const unspawned = healthy();
    unspawned.sessions[0]!.log = unspawned.sessions[0]!.log.filter((x) => x.kind !== "task_spawned" && x.kind !== "tool_outcome");
    unspawned.families[0]!.children = [];
    const violations = checkSubagents(unspawned.sessions, unspawned.families, ["p1"]).join("\n");
    expect(violations).toContain("task call call_0 has neither a child nor an outcome");
    expect(violations).toContain("research request p1 settled succeeded without spawning a child");
  });
});
