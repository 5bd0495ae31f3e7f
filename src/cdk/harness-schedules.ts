import { Duration } from "aws-cdk-lib";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { CfnSchedule } from "aws-cdk-lib/aws-scheduler";
import { Construct } from "constructs";
import { ID_RULES } from "../protocol/id-rules.ts";
import { SCHEDULE_NAME, scheduledFiringInput } from "../runtime/scheduled-dispatch.ts";

/**
 * One EventBridge Scheduler schedule that dispatches a `scheduled_tick` signal to one session of
 * one agent instance per firing. The dispatch id is `schedule:<name>:<scheduled time>`, so a
 * retried or duplicated invocation for the same firing admits nothing twice.
 */
export interface HarnessSchedule {
  /** Names the schedule in dispatch ids and the signal's sender (`[A-Za-z0-9_-]{1,64}`, unique). */
  readonly name: string;
  /** An EventBridge Scheduler expression: `rate(1 hour)`, `cron(0 9 ? * MON-FRI *)`, `at(2027-01-01T09:00:00)`. */
  readonly expression: string;
  /**
   * IANA time zone of a `cron` or `at` expression.
   * @default "UTC"
   */
  readonly timeZone?: string;
  /** The agent (one of the construct's agent names). */
  readonly agent: string;
  readonly instance: string;
  /** @default "default" */
  readonly session?: string;
  /** The signal's body: what the agent is asked to do at each firing (at most 6,000 characters). */
  readonly body: string;
  /**
   * Scheduler's retries of a failed invocation (each one replays the same dispatch id).
   * @default 3
   */
  readonly retryAttempts?: number;
}

/** Longest schedule body: Scheduler's 8,192-character input less room for the firing's other fields. */
export const MAX_SCHEDULE_BODY_CHARS = 6_000;

/** What the schedules need from the construct. */
export interface HarnessSchedulesProps {
  schedules: readonly HarnessSchedule[];
  /** The function that admits a firing (`lambda/schedule.ts`). */
  target: IFunction;
  agentNames: readonly string[];
}

/**
 * The `AWS::Scheduler::Schedule` resources of `schedules` and the role Scheduler assumes to
 * invoke the schedule function (that function only). Flexible time windows are off: a firing
 * is scheduled for its exact time, which is what its dispatch id names.
 */
export class HarnessSchedules extends Construct {
  readonly schedules: CfnSchedule[];
  readonly role: Role;

  constructor(scope: Construct, id: string, props: HarnessSchedulesProps) {
    super(scope, id);
    checkSchedules(props.schedules, props.agentNames);
    this.role = new Role(this, "InvokeRole", {
      assumedBy: new ServicePrincipal("scheduler.amazonaws.com"),
      description: "Lets EventBridge Scheduler invoke the harness schedule function",
    });
    this.role.addToPrincipalPolicy(
      new PolicyStatement({ sid: "InvokeScheduleFunction", actions: ["lambda:InvokeFunction"], resources: [props.target.functionArn] }),
    );
    this.schedules = props.schedules.map((schedule) => {
      return new CfnSchedule(this, `Schedule-${schedule.name}`, {
        description: `Dispatches a scheduled_tick signal to ${schedule.agent}/${schedule.instance} (schedule ${schedule.name})`,
        scheduleExpression: schedule.expression,
        scheduleExpressionTimezone: schedule.timeZone ?? "UTC",
        flexibleTimeWindow: { mode: "OFF" },
        target: {
          arn: props.target.functionArn,
          roleArn: this.role.roleArn,
          input: scheduledFiringInput({ schedule: schedule.name, agent: schedule.agent, instance: schedule.instance, session: schedule.session, body: schedule.body }),
          retryPolicy: {
            maximumRetryAttempts: schedule.retryAttempts ?? 3,
            maximumEventAgeInSeconds: Duration.hours(1).toSeconds(),
          },
        },
      });
    });
  }
}

/** Refuses at synth what the schedule function would refuse at every firing. */
function checkSchedules(schedules: readonly HarnessSchedule[], agentNames: readonly string[]): void {
  const names = new Set<string>();
  for (const s of schedules) {
    const where = `Harness: schedules[${JSON.stringify(s.name)}]`;
    if (!SCHEDULE_NAME.test(s.name)) throw new Error(`Harness: schedule name ${JSON.stringify(s.name)} must match ${SCHEDULE_NAME.source}`);
    if (names.has(s.name)) throw new Error(`${where}: the name is used twice`);
    names.add(s.name);
    if (!/^(rate|cron|at)\(.+\)$/.test(s.expression)) throw new Error(`${where}: expression ${JSON.stringify(s.expression)} is not rate(…), cron(…) or at(…)`);
    if (!agentNames.includes(s.agent)) throw new Error(`${where}: unknown agent ${JSON.stringify(s.agent)} (agents: ${agentNames.join(", ")})`);
    if (!ID_RULES.instance.test(s.instance)) throw new Error(`${where}: instance ${JSON.stringify(s.instance)} must match ${ID_RULES.instance.source}`);
    if (s.session !== undefined && !ID_RULES.session.test(s.session)) {
      throw new Error(`${where}: session ${JSON.stringify(s.session)} must match ${ID_RULES.session.source}`);
    }
    if (typeof s.body !== "string" || s.body === "") throw new Error(`${where}: body is required`);
    // Scheduler keeps a target's input up to 8,192 characters; the firing's other fields fit in the rest.
    if (s.body.length > MAX_SCHEDULE_BODY_CHARS) throw new Error(`${where}: body exceeds ${MAX_SCHEDULE_BODY_CHARS} characters (Scheduler's input limit)`);
    const retries = s.retryAttempts ?? 3;
    if (!Number.isInteger(retries) || retries < 0 || retries > 185) throw new Error(`${where}: retryAttempts must be an integer from 0 to 185`);
  }
}
