import { describe, expect, it } from "vitest";
import { runSoak } from "../../dev/soak/soak.ts";

/** A short soak: the server kill -9-ed and restarted while sessions run, then every invariant checked. */
describe("soak (short)", () => {
  it("loses nothing, settles everything exactly once and in order across kill -9 restarts, with cancels and subagents in the mix", { timeout: 240_000 }, async () => {
    const report = await runSoak({ sessions: 3, submissionsPerSession: 4, killEveryMs: 2_000, maxCrashes: 3, maxSeconds: 200, leaseMs: 1_000, compactionRate: 0.3, cancelRate: 0.5, subagentRate: 0.5, seed: 7 });
    expect(report.violations).toEqual([]);
    expect(report.submissions).toBe(12 + report.compactions);
    expect(report.crashes).toBeGreaterThan(0);
    // Half the slow replies and research requests were cancelled while they ran or waited (invariant 8 where answered 200).
    expect(report.cancels).toBeGreaterThan(0);
    expect(report.outcomes.cancelled).toBeGreaterThan(0);
    expect(Object.values(report.outcomes).reduce((a, b) => a + b, 0)).toBe(report.submissions);
    // Subagent families ran (parents parked, children settled and woke them), checked by invariants 9–15.
    expect(report.subagents.families).toBeGreaterThanOrEqual(2);
    expect(report.subagents.children).toBeGreaterThan(report.subagents.families);
  });
});
