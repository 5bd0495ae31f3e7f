import { describe, expect, it } from "vitest";
import { DEFAULT_QUOTAS, simulate, type TurnCosts } from "../../../bench/capacity-model.ts";

const costs: TurnCosts = {
  admissionSeconds: 0.05,
  workerHarnessSeconds: 0.3,
  writeUnitsPerTurn: 55,
  deltaWriteUnitsPerTurn: 25,
  readUnitsPerTurn: 24,
  viewerReadUnitsPerSecond: 7,
  sqsRequestsPerTurn: 4,
};
const steady = { ...DEFAULT_QUOTAS, eventSourceRampPerMinute: 0 };
const turn = { thinkSeconds: 30, modelSeconds: 10, streamingSeconds: 5 };

describe("the capacity model", () => {
  it("below every quota, follows Little's law: turns/s = sessions / cycle, workers = turns/s × run time", () => {
    const r = simulate({ sessions: 400, viewersPerSession: 1, ...turn }, costs, steady, { seconds: 300, warmupSeconds: 120 });
    const cycle = 30 + 10 + 0.3 + 0.05;
    expect(r.turnsPerSecond).toBeGreaterThan((400 / cycle) * 0.85);
    expect(r.turnsPerSecond).toBeLessThan((400 / cycle) * 1.15);
    expect(r.ceilings).toEqual([]);
    expect(r.throttledAdmissions + r.throttledStreams + r.throttledWorkerStarts).toBe(0);
    expect(r.queueP99).toBeLessThan(1);
    // Each viewer holds an http execution while its session's run is live.
    expect(r.peakHttp).toBeGreaterThan(r.peakWorkers * 0.8);
  });

  it("viewers and workers share the account's concurrency: enough viewers starve the runs", () => {
    const r = simulate({ sessions: 1_000, viewersPerSession: 5, ...turn }, costs, steady, { seconds: 120, warmupSeconds: 120 });
    expect(r.ceilings[0]).toMatch(/^Lambda account concurrency \(1000\)/);
    expect(r.throttledWorkerStarts).toBeGreaterThan(0);
    expect(r.turnsPerSecond).toBeLessThan(1_000 / 40.35);
  });

  it("a reservation for the worker alone does not save the runs: admissions share the http function with the viewers", () => {
    const reserved = { ...steady, workerReserved: 500 };
    const r = simulate({ sessions: 1_000, viewersPerSession: 5, ...turn }, costs, reserved, { seconds: 120, warmupSeconds: 120 });
    expect(r.throttledWorkerStarts).toBe(0);
    expect(r.throttledStreams).toBeGreaterThan(0);
    expect(r.throttledAdmissions).toBeGreaterThan(0);
  });

  it("from cold, the event source's ramp (+300 per minute) bounds how fast the workers scale", () => {
    const r = simulate({ sessions: 10_000, viewersPerSession: 0, ...turn }, costs, { ...DEFAULT_QUOTAS, accountConcurrency: 10_000, eventSourceMax: 3_000 }, { seconds: 60, warmupSeconds: 60 });
    expect(r.ceilings[0]).toMatch(/SQS event source/);
    expect(r.peakWorkers).toBeLessThanOrEqual(5 + 300 * 2);
  });
});
