/**
 * A `Harness` synthesized for a CDK unit test: stand-in handlers (test/unit/cdk/fixtures), no
 * bundling (`aws:cdk:bundling-stacks` empty), the template read back. Shared by the construct's
 * test files so each says only the props it is about.
 */
import { fileURLToPath } from "node:url";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { Harness, type HarnessProps } from "../../src/cdk/harness.ts";
import type { HarnessFunctionRole } from "../../src/lambda/env.ts";

/** A file of test/unit/cdk/fixtures. */
export const cdkFixture = (name: string): string => fileURLToPath(new URL(`../unit/cdk/fixtures/${name}`, import.meta.url));

/** The same stand-in handler for every function role. */
export const standInHandlers = (file = "handler.mjs") => {
  const handler = cdkFixture(file);
  return { http: handler, worker: handler, dlq: handler, sweeper: handler };
};

export interface Synth {
  stack: Stack;
  harness: Harness;
  template: Template;
}

export interface SynthOptions {
  /** Give the stack an account and region (a secret's or a layer's ARN needs them). */
  env?: boolean;
  /** The stand-in handler file in the fixtures (default `handler.mjs`). */
  handler?: string;
}

/** Synthesizes a Harness over the fixtures' agents with `props` (or props made from the stack). */
export function synthHarness(props: Partial<HarnessProps> | ((stack: Stack) => Partial<HarnessProps>) = {}, options: SynthOptions = {}): Synth {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new Stack(app, "Test", options.env ? { env: { account: "111122223333", region: "eu-west-1" } } : {});
  const harness = new Harness(stack, "Harness", {
    agentsEntry: cdkFixture("agents.ts"),
    handlerEntries: standInHandlers(options.handler),
    ...(typeof props === "function" ? props(stack) : props),
  });
  return { stack, harness, template: Template.fromStack(stack) };
}

/** The logical id of a construct's CloudFormation resource. */
export const logicalIdOf = (s: Synth, construct: { node: { defaultChild?: unknown } }): string =>
  s.stack.resolve((construct.node.defaultChild as { logicalId: string }).logicalId) as string;

/** The `AWS::Lambda::Function` properties of one of the harness's functions. */
export function functionProperties(s: Synth, role: HarnessFunctionRole): Record<string, any> {
  return (s.template.findResources("AWS::Lambda::Function")[logicalIdOf(s, s.harness.functions[role])] as { Properties: Record<string, any> }).Properties;
}

/** One function's environment variables (unresolved tokens included). */
export const envOf = (s: Synth, role: HarnessFunctionRole): Record<string, unknown> => functionProperties(s, role).Environment.Variables;
