/**
 * The crash matrix (issue 13): for every phase of the fault seam (`src/ports/faults.ts`), what a
 * submission must come to when its process dies there, in either shape. Each case runs two
 * submissions in one session: A, crashed at the phase, and B, admitted right behind it. The
 * checks are the same in both shapes (`test/scenarios/crash-matrix.test.ts`, embedded;
 * `test/scenarios/crash-matrix-local-cloud.aws.test.ts`, the local cloud).
 *
 * A phase added to the seam must get its row here (the `Record` makes typecheck say so).
 */
import type { ConversationRecord, SettledPayload } from "../../src/protocol/records.ts";
import type { CancelFaultPhase, FaultPhase, SubagentFaultPhase, WaitFaultPhase } from "../../src/ports/faults.ts";
import type { Submission } from "../../src/store/submission.ts";
import { checkInvariants } from "../../dev/soak/invariants.ts";

/** What A comes to after a crash at the phase. */
export interface CrashExpectation {
  /**
   * Attempts charged (the spec: a claim charges one; a crash after the claim costs the attempt,
   * so recovery's claim is the second; a crash once the settlement is reserved charges none).
   */
  attempts: number;
  /** A's settled outcome. */
  outcome: Pick<SettledPayload, "status" | "errorCode">;
}

const SUCCEEDED = { status: "succeeded" } as const;

export const CRASH_MATRIX: Record<Exclude<FaultPhase, SubagentFaultPhase | CancelFaultPhase | WaitFaultPhase>, CrashExpectation> = {
  admitted: { attempts: 1, outcome: SUCCEEDED },
  claimed: { attempts: 2, outcome: SUCCEEDED },
  attempt_started: { attempts: 2, outcome: SUCCEEDED },
  mid_stream: { attempts: 2, outcome: SUCCEEDED },
  tool_ran: { attempts: 2, outcome: SUCCEEDED },
  // The outcome is stored with the reservation: recovery writes the run's real settlement.
  reserved: { attempts: 1, outcome: SUCCEEDED },
  settled_recorded: { attempts: 1, outcome: SUCCEEDED },
  finalized: { attempts: 1, outcome: SUCCEEDED },
  next_head_ringing: { attempts: 1, outcome: SUCCEEDED },
  next_head_rung: { attempts: 1, outcome: SUCCEEDED },
};

/** A's message: a tool call (the keyless model's clock) and then a streamed reply, so every phase is reached. */
export const CRASHED_MESSAGE = "what time is it? (crashed)";
/** B's message, behind A in the session. */
export const NEXT_MESSAGE = "hello, next";

/** What a case left behind, read back after recovery. */
export interface CrashCaseEvidence {
  phase: Exclude<FaultPhase, SubagentFaultPhase | CancelFaultPhase | WaitFaultPhase>;
  sessionKey: string;
  a: Submission;
  b: Submission;
  /** The session's whole log after recovery. */
  log: readonly ConversationRecord[];
  /** The log as it stood when the process died (every record of it must survive, in place). */
  logAtCrash: readonly ConversationRecord[];
}

/** Every violated expectation of one case, one line each (empty when all hold). */
export function crashCaseViolations(evidence: CrashCaseEvidence): string[] {
  const { phase, a, b, log } = evidence;
  const expected = CRASH_MATRIX[phase];
  const violations = checkInvariants({
    sessions: [{ key: evidence.sessionKey, acknowledged: [a.id, b.id], log, live: [evidence.logAtCrash] }],
    unsettled: [a, b].filter((s) => s.status !== "settled"),
  });
  const fail = (what: string) => violations.push(`${phase}: ${what}`);
  if (a.attemptCount !== expected.attempts) fail(`A was charged ${a.attemptCount} attempts, expected ${expected.attempts}`);
  if (b.attemptCount !== 1) fail(`B was charged ${b.attemptCount} attempts, expected 1`);
  const outcome = (id: string) =>
    log.find((r): r is Extract<ConversationRecord, { kind: "submission_settled" }> => r.kind === "submission_settled" && r.submissionId === id)?.payload;
  const aOutcome = outcome(a.id);
  if (aOutcome && (aOutcome.status !== expected.outcome.status || aOutcome.errorCode !== expected.outcome.errorCode)) {
    fail(`A settled ${JSON.stringify(aOutcome)}, expected ${JSON.stringify(expected.outcome)}`);
  }
  if (a.outcome && JSON.stringify(a.outcome) !== JSON.stringify(aOutcome)) fail(`A's row holds ${JSON.stringify(a.outcome)}, its record ${JSON.stringify(aOutcome)}`);
  if (outcome(b.id)?.status !== "succeeded") fail(`B settled ${JSON.stringify(outcome(b.id))}`);
  // The log at the crash is a prefix of the final one (checked as a live reader from the start).
  if (evidence.logAtCrash.length > 0 && evidence.logAtCrash[0]!.id !== log[0]?.id) fail("the log at the crash is not where the final log starts");
  // Each input recorded once.
  for (const [name, sub] of [["A", a], ["B", b]] as const) {
    const inputs = log.filter((r) => r.kind === "user_message" && r.submissionId === sub.id && !("origin" in r.payload && r.payload.origin));
    if (inputs.length !== 1) fail(`${name}'s input recorded ${inputs.length} times`);
  }
  return violations;
}
