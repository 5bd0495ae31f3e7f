/**
 * The construct's memory sizes (issue 28, ADR 0032): each function gets its default from
 * `DEFAULT_MEMORY_MB` (chosen by `npm run bench -- memory`), and the worker's and http function's
 * props override theirs.
 */
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { CfnFunction } from "aws-cdk-lib/aws-lambda";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Harness, type HarnessProps } from "../../../src/cdk/harness.ts";
import { DEFAULT_MEMORY_MB } from "../../../src/cdk/memory-sizes.ts";
import { HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../../../src/lambda/env.ts";

const fixture = (name: string): string => fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));
const handler = fixture("handler.mjs");

function memoryOf(props: Partial<HarnessProps>): Record<HarnessFunctionRole | "schedule", number | undefined> {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new Stack(app, "Test");
  const harness = new Harness(stack, "Harness", {
    agentsEntry: fixture("agents.ts"),
    agentNames: ["echo"],
    handlerEntries: { http: handler, worker: handler, dlq: handler, sweeper: handler },
    ...props,
  });
  const functions = Template.fromStack(stack).findResources("AWS::Lambda::Function");
  const size = (fn: { node: { defaultChild?: unknown } } | undefined) =>
    fn && (functions[stack.resolve((fn.node.defaultChild as CfnFunction).logicalId) as string]?.Properties.MemorySize as number);
  return {
    ...(Object.fromEntries(HARNESS_FUNCTION_ROLES.map((role) => [role, size(harness.functions[role])])) as Record<HarnessFunctionRole, number>),
    schedule: size(harness.scheduleFunction),
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
