/**
 * The data resources of a synthesized stack, created on the emulators as the template declares
 * them: the table (keys, indexes, TTL attribute, billing mode) on DynamoDB Local, the queues
 * (FIFO, deduplication scope, throughput limit, visibility, retention, redrive to the DLQ with
 * its `maxReceiveCount`) and the bucket on fauxqs. Returns what each logical id resolves to (name,
 * URL, ARN), for the functions' environment and their roles' policies.
 */
import { CreateTableCommand, type CreateTableCommandInput, UpdateTimeToLiveCommand } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { createDynamoClient, createS3Client } from "../../src/dynamodb/index.ts";
import { type LocalResource, type ResolveContext, resolveIntrinsics } from "./cfn-intrinsics.ts";
import type { StackTemplate } from "./stack-template.ts";

/** The account every local ARN names (fauxqs's own). */
export const LOCAL_ACCOUNT = "000000000000";

export interface StackResources {
  resources: Map<string, LocalResource>;
  tableName: string;
  bucketName: string;
  /** Queue URL and ARN by logical id. */
  queues: Map<string, { url: string; arn: string; properties: Record<string, any> }>;
}

/** Names every resource of the template (created or not) so intrinsics resolve against them. */
export function nameResources(stack: StackTemplate, name: string, region: string): Map<string, LocalResource> {
  const resources = new Map<string, LocalResource>();
  const arn = (service: string, rest: string) => `arn:aws:${service}:${region}:${LOCAL_ACCOUNT}:${rest}`;
  for (const [id, type] of stack.resourceTypes) {
    const physical = `${name}-${id}`;
    switch (type) {
      case "AWS::DynamoDB::GlobalTable":
      case "AWS::DynamoDB::Table": {
        const table = `${name}-table`;
        resources.set(id, { ref: table, attributes: { Arn: arn("dynamodb", `table/${table}`), StreamArn: arn("dynamodb", `table/${table}/stream/local`) } });
        break;
      }
      case "AWS::S3::Bucket": {
        const bucket = `${name}-bucket`.toLowerCase().slice(0, 63);
        resources.set(id, {
          ref: bucket,
          attributes: { Arn: `arn:aws:s3:::${bucket}`, DomainName: `${bucket}.s3.amazonaws.com`, RegionalDomainName: `${bucket}.s3.${region}.amazonaws.com` },
        });
        break;
      }
      case "AWS::SQS::Queue":
        // The URL is the emulator's, filled in when the queue is created.
        break;
      case "AWS::Lambda::Function": {
        const fn = physical.slice(0, 64);
        resources.set(id, { ref: fn, attributes: { Arn: arn("lambda", `function:${fn}`) } });
        break;
      }
      case "AWS::IAM::Role":
        resources.set(id, { ref: physical.slice(0, 64), attributes: { Arn: `arn:aws:iam::${LOCAL_ACCOUNT}:role/${physical.slice(0, 64)}`, RoleId: `AROA${id.toUpperCase().slice(0, 17)}` } });
        break;
      case "AWS::Logs::LogGroup":
        resources.set(id, { ref: `/aws/lambda/${physical}`, attributes: { Arn: arn("logs", `log-group:/aws/lambda/${physical}:*`) } });
        break;
      default:
        resources.set(id, { ref: physical, attributes: { Arn: arn(type.split("::")[1]!.toLowerCase(), physical) } });
    }
  }
  return resources;
}

/** Creates the table, bucket and queues of `stack` on the emulators named by `AWS_ENDPOINT_URL_*`. */
export async function createStackResources(stack: StackTemplate, name: string, sqs: SQSClient, ctx: Omit<ResolveContext, "resources">): Promise<StackResources> {
  const resources = nameResources(stack, name, ctx.region);
  const resolveCtx: ResolveContext = { ...ctx, resources };
  const dynamo = createDynamoClient();
  const s3 = createS3Client();
  try {
    const table = stack.table && resources.get(stack.table.logicalId)!.ref;
    const bucket = stack.bucket && resources.get(stack.bucket.logicalId)!.ref;
    const [, , queues] = await Promise.all([
      // Already there (a persisted DATA_DIR of an earlier run): kept as it is.
      table && createTable(dynamo, table, stack.table!.properties).catch(ifNot("ResourceInUseException")),
      bucket && s3.send(new CreateBucketCommand({ Bucket: bucket })).catch(ifNot("BucketAlreadyOwnedByYou")),
      createQueues(stack, name, sqs, resources, resolveCtx),
    ]);
    return { resources, tableName: table ?? "", bucketName: bucket ?? "", queues };
  } finally {
    dynamo.destroy();
    s3.destroy();
  }
}

const ifNot = (name: string) => (err: unknown) => {
  if ((err as { name?: string }).name !== name) throw err;
};

async function createTable(dynamo: ReturnType<typeof createDynamoClient>, tableName: string, p: Record<string, any>): Promise<void> {
  const input: CreateTableCommandInput = {
    TableName: tableName,
    AttributeDefinitions: p.AttributeDefinitions,
    KeySchema: p.KeySchema,
    BillingMode: p.BillingMode ?? "PROVISIONED",
    ...(p.BillingMode === "PAY_PER_REQUEST" ? {} : { ProvisionedThroughput: { ReadCapacityUnits: 5, WriteCapacityUnits: 5 } }),
    ...(p.GlobalSecondaryIndexes?.length
      ? {
          GlobalSecondaryIndexes: (p.GlobalSecondaryIndexes as Array<Record<string, any>>).map((g) => ({
            IndexName: g.IndexName,
            KeySchema: g.KeySchema,
            Projection: g.Projection,
            ...(p.BillingMode === "PAY_PER_REQUEST" ? {} : { ProvisionedThroughput: { ReadCapacityUnits: 5, WriteCapacityUnits: 5 } }),
          })),
        }
      : {}),
    ...(p.LocalSecondaryIndexes?.length ? { LocalSecondaryIndexes: p.LocalSecondaryIndexes } : {}),
  };
  await dynamo.send(new CreateTableCommand(input));
  const ttl = p.TimeToLiveSpecification;
  if (ttl?.Enabled) {
    await dynamo.send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { Enabled: true, AttributeName: ttl.AttributeName } }));
  }
}

/** The SQS attributes of a template queue (dead-letter target resolved). */
function queueAttributes(p: Record<string, any>, ctx: ResolveContext): Record<string, string> {
  const out: Record<string, string> = {};
  const copy = ["FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit", "VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "MaximumMessageSize", "ReceiveMessageWaitTimeSeconds"];
  for (const key of copy) if (p[key] !== undefined) out[key] = String(p[key]);
  if (p.RedrivePolicy) out.RedrivePolicy = JSON.stringify(resolveIntrinsics(p.RedrivePolicy, ctx));
  return out;
}

async function createQueues(stack: StackTemplate, name: string, sqs: SQSClient, resources: Map<string, LocalResource>, ctx: ResolveContext): Promise<StackResources["queues"]> {
  const out: StackResources["queues"] = new Map();
  // Dead-letter queues first: a redrive policy names its target's ARN.
  const pending = [...stack.queues];
  const targetOf = (q: (typeof pending)[number]) => {
    const arn = q.properties.RedrivePolicy?.deadLetterTargetArn;
    const att = arn?.["Fn::GetAtt"];
    return Array.isArray(att) ? String(att[0]) : undefined;
  };
  while (pending.length > 0) {
    const i = pending.findIndex((q) => {
      const target = targetOf(q);
      return target === undefined || out.has(target);
    });
    if (i < 0) throw new Error(`queues ${pending.map((q) => q.logicalId).join(", ")}: a redrive target is not a queue of this stack`);
    const [q] = pending.splice(i, 1) as [(typeof pending)[number]];
    const fifo = String(q.properties.FifoQueue) === "true";
    const queueName = `${name}-${q.logicalId}`.slice(0, fifo ? 75 : 80) + (fifo ? ".fifo" : "");
    const created = await sqs.send(new CreateQueueCommand({ QueueName: queueName, Attributes: queueAttributes(q.properties, ctx) }));
    const arn = `arn:aws:sqs:${ctx.region}:${LOCAL_ACCOUNT}:${queueName}`;
    resources.set(q.logicalId, { ref: created.QueueUrl!, attributes: { Arn: arn, QueueName: queueName, QueueUrl: created.QueueUrl! } });
    out.set(q.logicalId, { url: created.QueueUrl!, arn, properties: q.properties });
  }
  return out;
}
