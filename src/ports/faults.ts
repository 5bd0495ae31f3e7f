/**
 * The fault seam: named points in the life of a submission where a test may crash or pause the
 * process (crash tests, the crash matrix, the soak). Test-only and free when off: each point is
 * one `await ctx.faults?.(phase, submissionId)` (no hook: one branch), and nothing installs a
 * hook but a test, or a dev tool's preload (`dev/faults/`, `HARNESS_FAULTS`).
 *
 * Adding a phase is a one-liner at the point (`await ctx.faults?.("my_phase", sub.id)`) plus its
 * name in {@link FAULT_PHASES}.
 */
export const FAULT_PHASES = [
  /** The submission is durable; its doorbell not yet rung (admission). */
  "admitted",
  /** The claim's compare-and-set won; no attempt marker yet. */
  "claimed",
  /** The attempt marker is durable; the drive has not started. */
  "attempt_started",
  /** A text delta of the attempt is durable; the reply goes on (once per attempt). */
  "mid_stream",
  /** A tool call ran; its `tool_outcome` is not yet appended. */
  "tool_ran",
  /** The settlement is reserved (`terminalizing`); no `submission_settled` record yet. */
  "reserved",
  /** The `submission_settled` record is durable; the row is not finalized. */
  "settled_recorded",
  /** The row is `settled`; the session's next head is not yet rung. */
  "finalized",
  /** The session's next head is queued and about to be rung (the settled submission's id). */
  "next_head_ringing",
  /** The session's next head was rung (the settled submission's id). */
  "next_head_rung",
  /** A parent is parked `waiting`; children that settled before the park are not yet delivered (the parent's id). */
  "parked",
  /** A child's settlement record is durable; its outcome is not yet delivered to its parent (the child's id). */
  "parent_waking",
  /** The child's outcome requeued its parent; the parent's doorbell is not yet rung (the parent's id). */
  "parent_requeued",
  /**
   * A cancel reserved a queued or waiting submission's settlement with the cancel's outcome
   * (`terminalizing`); its `submission_settled` record is not yet written (the canceller's process).
   */
  "cancel_reserved",
  /**
   * A drive suspended on wait entries (an approval, a callback, a child): their records are durable,
   * the submission is not parked yet (ADR 0025).
   */
  "parking",
  /**
   * A decision's or callback's guarded write is durable and requeued its submission; its doorbell
   * is not yet rung (the decider's process; the submission's id).
   */
  "decided",
] as const;

/** A named point where a test may inject a fault. */
export type FaultPhase = (typeof FAULT_PHASES)[number];

/**
 * The phases only a parent and its children reach (durable subagents): the crash matrix's plain
 * submissions never pass them; `test/scenarios/subagent-crash.test.ts` crashes at each.
 */
export const SUBAGENT_FAULT_PHASES = ["parked", "parent_waking", "parent_requeued"] as const satisfies readonly FaultPhase[];

export type SubagentFaultPhase = (typeof SUBAGENT_FAULT_PHASES)[number];

/**
 * The phases only a cancel passes (in the canceller's process, the http function on Lambda):
 * the cancel tests crash at each (`test/unit/engine/cancel.test.ts`, `test/e2e/lambda/cancel.aws.test.ts`).
 */
export const CANCEL_FAULT_PHASES = ["cancel_reserved"] as const satisfies readonly FaultPhase[];

export type CancelFaultPhase = (typeof CANCEL_FAULT_PHASES)[number];

/**
 * The phases only a submission that waits for a person or a callback passes (ADR 0025): the
 * approval crash tests crash at each, with `tool_ran` (`test/scenarios/approval-crash-local-cloud.aws.test.ts`).
 */
export const WAIT_FAULT_PHASES = ["parking", "decided"] as const satisfies readonly FaultPhase[];

export type WaitFaultPhase = (typeof WAIT_FAULT_PHASES)[number];

/** The phases every submission passes (the crash matrix's). */
export const SUBMISSION_FAULT_PHASES = FAULT_PHASES.filter(
  (p): p is Exclude<FaultPhase, SubagentFaultPhase | CancelFaultPhase | WaitFaultPhase> =>
    ![...SUBAGENT_FAULT_PHASES, ...CANCEL_FAULT_PHASES, ...WAIT_FAULT_PHASES].includes(p as never),
);

/**
 * Called at every fault point of a runtime that has one; the point waits for what it returns
 * (a never-settling promise hangs the process there, as a crash would leave it).
 */
export type FaultHook = (phase: FaultPhase, submissionId: string) => void | Promise<void>;

/**
 * The process's hook lives on `globalThis` under a registered symbol, not in this module: a
 * bundled handler (the local cloud runs the synthesized assets) has its own copy of this module,
 * and the hook the container installs before importing it must reach that copy too.
 */
const PROCESS_HOOK = Symbol.for("resolute-harness.faults");
type HookHolder = { [PROCESS_HOOK]?: FaultHook };

/**
 * Test-only: the hook that every runtime created afterwards in this process uses unless its
 * config names its own (`RuntimeConfig.faults`). `undefined` removes it. A dev tool installs it
 * before the code under test builds its runtime (see `dev/faults/process-faults.ts`).
 */
export function installProcessFaults(hook: FaultHook | undefined): void {
  (globalThis as HookHolder)[PROCESS_HOOK] = hook;
}

/** The process's fault hook, if a test installed one. */
export function processFaults(): FaultHook | undefined {
  return (globalThis as HookHolder)[PROCESS_HOOK];
}
