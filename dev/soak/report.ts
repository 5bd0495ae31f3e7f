/** What a soak reports, in both shapes, and how it prints. */
import type { Store } from "../../src/store/store.ts";
import type { SessionEvidence } from "./invariants.ts";
import type { SubagentFigures } from "./subagent-invariants.ts";

/** Kills that landed while some parent waited on its children, and while some parent ran. */
export interface KillPhases {
  parentWaiting: number;
  parentRunning: number;
}

export interface SoakReport {
  violations: string[];
  submissions: number;
  crashes: number;
  steersDelivered: number;
  followUpsDelivered: number;
  /** Manual compactions admitted (each a submission of its own). */
  compactions: number;
  /** Cancels the harness accepted. */
  cancels: number;
  records: number;
  /** Settlements by outcome: `succeeded`, or the failed error code. */
  outcomes: Record<string, number>;
  /** Attempts charged, by submission, from the store. */
  attempts: { total: number; max: number; maxId?: string };
  /** Milliseconds from first POST to the settled outcome, per submission. */
  settleMs: { p50: number; p99: number; max: number };
  /** Parents that spawned children, the children, and how both settled. */
  subagents: SubagentFigures;
  /** What the kills hit, as the harness answered just before each. */
  killPhases: KillPhases;
  /**
   * From the load's end (the last admission acknowledged) to the last settlement of an
   * acknowledged submission, ms (0 when everything had settled by then): what a stall adds.
   */
  drainMs: number;
  seconds: number;
}

/** Attempts charged, from the store's rows of every acknowledged submission. */
export async function attemptsOf(store: Pick<Store, "getSubmission">, sessions: readonly SessionEvidence[]): Promise<SoakReport["attempts"]> {
  let total = 0;
  let max = 0;
  let maxId: string | undefined;
  for (const session of sessions) {
    for (const id of session.acknowledged) {
      const sub = await store.getSubmission(id);
      total += sub.attemptCount;
      if (sub.attemptCount > max) [max, maxId] = [sub.attemptCount, id];
    }
  }
  return { total, max, maxId };
}

/**
 * Milliseconds from `loadEndedAt` to the last settlement among the acknowledged submissions
 * (their rows' last transition), 0 when none settled after it.
 */
export async function drainMsOf(store: Pick<Store, "getSubmission">, sessions: readonly SessionEvidence[], loadEndedAt: number): Promise<number> {
  let last = loadEndedAt;
  for (const session of sessions) {
    for (const id of session.acknowledged) {
      const sub = await store.getSubmission(id);
      if (sub.status === "settled") last = Math.max(last, sub.updatedAt);
    }
  }
  return last - loadEndedAt;
}

/** The report's figures, one per line. */
export function formatReport(report: SoakReport, extra: Record<string, string> = {}): string {
  const lines = [
    `submissions settled:      ${report.submissions}`,
    `outcomes:                 ${tally(report.outcomes)}`,
    `crashes (kill -9):        ${report.crashes} (${report.killPhases.parentWaiting} while a parent waited on its children, ${report.killPhases.parentRunning} while a parent ran)`,
    ...Object.entries(extra).map(([k, v]) => `${`${k}:`.padEnd(26)}${v}`),
    `steers / follow-ups:      ${report.steersDelivered} / ${report.followUpsDelivered} delivered`,
    `manual compactions:       ${report.compactions}`,
    `cancels accepted:         ${report.cancels}`,
    `subagent families:        ${report.subagents.families} parents (${tally(report.subagents.parents)}), ${report.subagents.children} children (${tally(report.subagents.childOutcomes)})`,
    `records read back:        ${report.records}`,
    `attempts charged:         ${report.attempts.total} (max ${report.attempts.max} for one submission${report.attempts.maxId ? `, ${report.attempts.maxId}` : ""})`,
    `POST → settled (ms):      (awaited ones) p50 ${report.settleMs.p50}, p99 ${report.settleMs.p99}, max ${report.settleMs.max}`,
    `load end → last settled:  ${(report.drainMs / 1000).toFixed(1)} s`,
    `duration:                 ${report.seconds} s`,
    `invariants:               ${report.violations.length === 0 ? "all hold" : `${report.violations.length} VIOLATED`}`,
    ...report.violations.map((v) => `  ✗ ${v}`),
  ];
  return lines.join("\n");
}


function tally(counts: Record<string, number>): string {
  return Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") || "none";
}
