import { describe, expect, it } from "vitest";
import { runCloudSoak } from "../../dev/soak/cloud-soak.ts";

/**
 * A short cloud soak (`npm run soak -- --cloud --short`, smaller): the serverless shape on the
 * test's DynamoDB Local and fauxqs while worker processes are `kill -9`-ed (a busy one and one
 * before its handler), duplicate doorbells arrive and DynamoDB calls are throttled; then every
 * invariant, the queues and each kill's stall checked. The construct's own timeouts are the
 * soak's default (`npm run soak -- --cloud`, minutes); here they are shortened.
 */
describe("cloud soak (short)", () => {
  it("loses nothing and settles everything in order across worker kills, duplicates and throttles; no kill stalls its session", { timeout: 300_000 }, async () => {
    const output: string[] = [];
    const report = await runCloudSoak({
      sessions: 2,
      submissionsPerSession: 2,
      killEveryMs: 2_000,
      maxCrashes: 2,
      throttleEvery: 25,
      duplicateRate: 0.5,
      compactionRate: 0.3,
      cancelRate: 0.3,
      subagentRate: 0.3,
      maxSeconds: 240,
      short: true,
      workers: 2,
      seed: 5,
      log: (line) => output.push(line),
    });
    expect(report.violations, output.join("\n").slice(-4_000)).toEqual([]);
    expect(report.submissions).toBe(4 + report.compactions);
    expect(report.crashes).toBeGreaterThan(0);
    expect(report.stalls.length).toBe(report.crashes);
    expect(report.drainMs).toBeGreaterThanOrEqual(0);
  });
});
