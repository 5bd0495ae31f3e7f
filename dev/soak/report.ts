/** What a soak reports, in both shapes, and how it prints. */
import type { Store } from "../../src/ports/store.ts";
import type { SessionEvidence } from "./invariants.ts";

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
  attempts: { total: number; max: number };
  /** Milliseconds from first POST to the settled outcome, per submission. */
  settleMs: { p50: number; p99: number; max: number };
  seconds: number;
}

/** Attempts charged, from the store's rows of every acknowledged submission. */
export async function attemptsOf(store: Pick<Store, "getSubmission">, sessions: readonly SessionEvidence[]): Promise<{ total: number; max: number }> {
  let total = 0;
  let max = 0;
  for (const session of sessions) {
    for (const id of session.acknowledged) {
      const sub = await store.getSubmission(id);
      total += sub.attemptCount;
      max = Math.max(max, sub.attemptCount);
    }
  }
  return { total, max };
}

/** The report's figures, one per line. */
export function formatReport(report: SoakReport, extra: Record<string, string> = {}): string {
  const lines = [
    `submissions settled:      ${report.submissions}`,
    `outcomes:                 ${Object.entries(report.outcomes).map(([k, n]) => `${n} ${k}`).join(", ")}`,
    `crashes (kill -9):        ${report.crashes}`,
    ...Object.entries(extra).map(([k, v]) => `${`${k}:`.padEnd(26)}${v}`),
    `steers / follow-ups:      ${report.steersDelivered} / ${report.followUpsDelivered} delivered`,
    `manual compactions:       ${report.compactions}`,
    `cancels accepted:         ${report.cancels}`,
    `records read back:        ${report.records}`,
    `attempts charged:         ${report.attempts.total} (max ${report.attempts.max} for one submission)`,
    `POST → settled (ms):      (awaited ones) p50 ${report.settleMs.p50}, p99 ${report.settleMs.p99}, max ${report.settleMs.max}`,
    `duration:                 ${report.seconds} s`,
    `invariants:               ${report.violations.length === 0 ? "all hold" : `${report.violations.length} VIOLATED`}`,
    ...report.violations.map((v) => `  ✗ ${v}`),
  ];
  return lines.join("\n");
}

