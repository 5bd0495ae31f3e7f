import nag from "cdk-nag";
import { describe, expect, it } from "vitest";
import type { HarnessProps } from "../../../src/cdk/harness.ts";
import type { HarnessSchedule } from "../../../src/cdk/harness-schedules.ts";
import { HARNESS_ENV } from "../../../src/lambda/env.ts";
import { scheduledDispatch } from "../../../src/runtime/scheduled-dispatch.ts";
import { synthHarness } from "../../support/cdk-synth.ts";

/** The construct's `schedules` option: EventBridge Scheduler → the schedule function → one dispatch per firing. */

const synth = (props: Partial<HarnessProps> = {}) => synthHarness(props);

const standup: HarnessSchedule = {
  name: "standup",
  expression: "cron(0 9 ? * MON-FRI *)",
  timeZone: "Europe/Paris",
  agent: "echo",
  instance: "team-a",
  session: "daily",
  body: "Write the standup summary.",
};

describe("Harness: schedules", () => {
  const s = synth({ schedules: [standup, { name: "hourly", expression: "rate(1 hour)", agent: "echo", instance: "ops", body: "Check in." }] });
  const ref = (construct: { node: { defaultChild?: unknown } }) => s.stack.resolve((construct.node.defaultChild as { logicalId: string }).logicalId) as string;
  const fnId = ref(s.harness.scheduleFunction!);
  const schedules = Object.values(s.template.findResources("AWS::Scheduler::Schedule")).map((r) => r.Properties as Record<string, any>);

  it("makes one AWS::Scheduler::Schedule per schedule, invoking the schedule function at the exact time", () => {
    expect(schedules).toHaveLength(2);
    const cron = schedules.find((p) => p.ScheduleExpression === standup.expression)!;
    expect(cron.ScheduleExpressionTimezone).toBe("Europe/Paris");
    expect(cron.FlexibleTimeWindow).toEqual({ Mode: "OFF" });
    expect(cron.Target.Arn).toEqual({ "Fn::GetAtt": [fnId, "Arn"] });
    expect(cron.Target.RetryPolicy).toEqual({ MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 });
    expect(schedules.find((p) => p.ScheduleExpression === "rate(1 hour)")!.ScheduleExpressionTimezone).toBe("UTC");
  });

  it("hands the function a firing whose scheduled time Scheduler fills in, so the dispatch id is per window", () => {
    const cron = schedules.find((p) => p.ScheduleExpression === standup.expression)!;
    const input = JSON.parse(cron.Target.Input as string);
    expect(input).toEqual({
      schedule: "standup",
      agent: "echo",
      instance: "team-a",
      session: "daily",
      body: "Write the standup summary.",
      scheduledTime: "<aws.scheduler.scheduled-time>",
    });
    // What the function makes of one firing (the time as Scheduler substitutes it).
    const request = scheduledDispatch({ ...input, scheduledTime: "2026-12-01T08:00:00Z" });
    expect(request.dispatchId).toBe("schedule:standup:2026-12-01T08:00:00.000Z");
    expect(request.message).toMatchObject({ kind: "signal", signal: { type: "scheduled_tick", tag: request.dispatchId } });
  });

  it("lets Scheduler invoke that function and nothing else, through a role only scheduler.amazonaws.com assumes", () => {
    const roleId = ref(s.harness.schedules!.role);
    const role = s.template.findResources("AWS::IAM::Role")[roleId]!.Properties as Record<string, any>;
    expect(role.AssumeRolePolicyDocument.Statement).toEqual([
      { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "scheduler.amazonaws.com" } },
    ]);
    for (const p of schedules) expect(p.Target.RoleArn).toEqual({ "Fn::GetAtt": [roleId, "Arn"] });
    const policies = Object.values(s.template.findResources("AWS::IAM::Policy")).filter((p: any) =>
      p.Properties.Roles.some((r: { Ref?: string }) => r.Ref === roleId),
    );
    expect(policies.flatMap((p: any) => p.Properties.PolicyDocument.Statement)).toEqual([
      { Sid: "InvokeScheduleFunction", Effect: "Allow", Action: "lambda:InvokeFunction", Resource: { "Fn::GetAtt": [fnId, "Arn"] } },
    ]);
  });

  it("gives the schedule function the agent names only (it admits, never runs an agent)", () => {
    const fn = s.template.findResources("AWS::Lambda::Function")[fnId]!.Properties as Record<string, any>;
    expect(fn.Environment.Variables[HARNESS_ENV.agentNames]).toBe("echo");
    expect(fn.Environment.Variables[HARNESS_ENV.tableName]).toBeDefined();
  });

  it("passes cdk-nag's AwsSolutions checks", () => {
    const report = new nag.AwsSolutionsChecks().validateScope(s.stack);
    expect(report.violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`)).toEqual([]);
  });

  it("adds nothing without schedules", () => {
    const none = synth();
    expect(none.harness.scheduleFunction).toBeUndefined();
    expect(none.template.findResources("AWS::Scheduler::Schedule")).toEqual({});
  });

  it("refuses at synth what every firing would refuse", () => {
    const bad = (change: Partial<HarnessSchedule>) => () => synth({ schedules: [{ ...standup, ...change }] });
    expect(bad({ agent: "nobody" })).toThrow(/unknown agent "nobody"/);
    expect(bad({ name: "no spaces" })).toThrow(/schedule name "no spaces"/);
    expect(bad({ expression: "every day" })).toThrow(/not rate\(…\), cron\(…\) or at\(…\)/);
    expect(bad({ instance: "a/b" })).toThrow(/instance "a\/b"/);
    expect(bad({ body: "" })).toThrow(/body is required/);
    expect(bad({ body: "x".repeat(6_001) })).toThrow(/body exceeds 6000 characters/);
    expect(() => synth({ schedules: [standup, standup] })).toThrow(/used twice/);
  });
});
