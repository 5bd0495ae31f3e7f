import { Duration } from "aws-cdk-lib";
import { Alarm, ComparisonOperator, type IMetric, TreatMissingData } from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { Function as CdkFunction } from "aws-cdk-lib/aws-lambda";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import type { HarnessProps } from "./harness-props.ts";

/**
 * The construct's alarms: doorbells arriving in the dead-letter queue, one left there undrained
 * for 10 minutes, worker errors, and (on request) worker throttles. Each notifies `alarmTopic`
 * when it fires and when it recovers. They cost $0.10 each a month, so the construct creates
 * them only when someone can be told (see `HarnessProps.alarms`).
 */
export function createHarnessAlarms(
  scope: Construct,
  { worker, deadLetterQueue, props }: { worker: CdkFunction; deadLetterQueue: Queue; props: HarnessProps },
): Alarm[] {
  const alarms: Alarm[] = [];
  const alarm = (id: string, description: string, metric: IMetric, threshold = 0): void => {
    const created = new Alarm(scope, id, {
      alarmDescription: description,
      metric,
      threshold,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (props.alarmTopic) {
      created.addAlarmAction(new SnsAction(props.alarmTopic));
      created.addOkAction(new SnsAction(props.alarmTopic));
    }
    alarms.push(created);
  };
  const fiveMinutes = Duration.minutes(5);
  alarm(
    "DlqArrivalsAlarm",
    "SQS gave up on a doorbell (receive count exhausted). The dlq function settles it only when the durable attempt budget is spent, otherwise re-rings it: look at the worker's errors.",
    deadLetterQueue.metricNumberOfMessagesReceived({ period: fiveMinutes, statistic: "Sum" }),
  );
  alarm(
    "DlqDepthAlarm",
    "A doorbell has waited in the dead-letter queue for over 10 minutes: the dlq function's scheduled drain is failing or not running.",
    deadLetterQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: "Maximum" }),
    600,
  );
  alarm(
    "WorkerErrorsAlarm",
    "The worker threw or timed out. It reports failures as batch item failures, so any error is a crash, an init failure or a timeout.",
    worker.metricErrors({ period: fiveMinutes, statistic: "Sum" }),
  );
  if (props.workerThrottleAlarm) {
    alarm(
      "WorkerThrottlesAlarm",
      "Worker invocations were throttled (account or reserved concurrency exhausted).",
      worker.metricThrottles({ period: fiveMinutes, statistic: "Sum" }),
    );
  }
  return alarms;
}
