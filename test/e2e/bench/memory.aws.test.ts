/**
 * `npm run bench -- memory`, short (issue 28): every function of the local cloud runs under the
 * construct's default memory size as a hard limit through a 200 KB input and a 2 MB tool output
 * (the soak's mix of sessions is the long run's); the bench prints each function's peak resident
 * size against its size, and no work is lost at the defaults (the claim ADR 0032's sizes rest on).
 */
import { describe, expect, it } from "vitest";
import { benchMemory } from "../../../bench/memory.ts";
import { DEFAULT_MEMORY_MB } from "../../../src/cdk/memory-sizes.ts";
import { figureOf, printed } from "./printed.ts";

describe("bench memory (short)", () => {
  it("prints each function's peak RSS under its default size, and loses no work", async () => {
    const output = await printed(() => benchMemory(DEFAULT_MEMORY_MB, { sessions: 0, submissions: 0, largeRuns: 1, workers: 1, runningEmulators: true }));
    for (const name of ["http", "dlq", "sweeper"]) {
      const peak = figureOf(output, new RegExp(`^  ${name} peak RSS under 256 MB`));
      expect(peak, name).toBeGreaterThan(20);
      expect(peak, name).toBeLessThan(256);
    }
    expect(output).toMatch(/worker-\d+ peak RSS under 256 MB: [\d.]+ MiB/);
    expect(figureOf(output, /work lost/), output).toBe(0);
  }, 600_000);
});
