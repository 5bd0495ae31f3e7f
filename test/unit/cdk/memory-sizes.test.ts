/**
 * The construct's memory sizes (issue 28, ADR 0032): each function gets its default from
 * `DEFAULT_MEMORY_MB` (chosen by `npm run bench -- memory`), and the worker's and http function's
 * props override theirs.
 */
import { describe, expect, it } from "vitest";
import type { HarnessProps } from "../../../src/cdk/harness.ts";
import { DEFAULT_MEMORY_MB } from "../../../src/cdk/memory-sizes.ts";
import { HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../../../src/lambda/env.ts";
import { logicalIdOf, synthHarness } from "../../support/cdk-synth.ts";

function memoryOf(props: Partial<HarnessProps>): Record<HarnessFunctionRole | "schedule", number | undefined> {
  const s = synthHarness({ agentNames: ["echo"], ...props });
  const functions = s.template.findResources("AWS::Lambda::Function");
  const size = (fn: { node: { defaultChild?: unknown } } | undefined) => fn && (functions[logicalIdOf(s, fn)]?.Properties.MemorySize as number);
  return {
    ...(Object.fromEntries(HARNESS_FUNCTION_ROLES.map((role) => [role, size(s.harness.functions[role])])) as Record<HarnessFunctionRole, number>),
    schedule: size(s.harness.scheduleFunction),
  };
}

describe("memory sizes", () => {
  it("every function gets the measured default: 256 MB each, the worker and the http function included", () => {
    expect(DEFAULT_MEMORY_MB).toEqual({ http: 256, worker: 256, dlq: 256, sweeper: 256, schedule: 256 });
    const sizes = memoryOf({ schedules: [{ name: "daily", expression: "rate(1 day)", agent: "echo", instance: "ops", body: "daily tick" }] });
    expect(sizes).toEqual({ http: 256, worker: 256, dlq: 256, sweeper: 256, schedule: 256 });
  }, 120_000);

  it("workerMemorySize and httpMemorySize raise theirs only", () => {
    expect(memoryOf({ workerMemorySize: 1024, httpMemorySize: 512 })).toEqual({ http: 512, worker: 1024, dlq: 256, sweeper: 256, schedule: undefined });
  });
});
