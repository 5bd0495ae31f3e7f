import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { App, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { AccountRootPrincipal, type CfnRole, Role } from "aws-cdk-lib/aws-iam";
import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import nag from "cdk-nag";
import { describe, expect, it } from "vitest";
import { build } from "esbuild";
import { HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole, NAMES_ONLY_ROLES } from "../../../src/lambda/env.ts";
import { defaultHandlerEntry, Harness } from "../../../src/cdk/harness.ts";
import { HarnessPropsInvalid, LAMBDA_ENVIRONMENT_MAX_BYTES, lambdaEnvironmentBytes } from "../../../src/cdk/harness-checks.ts";
import { entryFileOf, LAMBDA_ENTRY_FILE, lambdaBuildOptions, RESULT_SCHEMA_WORKER_FILE, staticClosure } from "../../../src/cdk/lambda-bundling.ts";
import { HARNESS_TABLE } from "../../../src/dynamodb/table.ts";
import { cdkFixture, functionProperties, logicalIdOf, standInHandlers, synthHarness, type Synth } from "../../support/cdk-synth.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const handlerEntries = standInHandlers();
/** The app's bearer token, by reference (what an unauthenticated front door needs). */
const BEARER_TOKEN = { HARNESS_BEARER_TOKEN: { parameterName: "/harness/token" } } as const;

/** What `f` throws (undefined when it does not). */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  return undefined;
}


interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

/** Every policy statement attached to the execution role of one function. */
function statements(s: Synth, role: HarnessFunctionRole): Statement[] {
  const roleId = logicalIdOf(s, s.harness.functions[role].role as Role);
  return Object.values(s.template.findResources("AWS::IAM::Policy")).flatMap((policy: any) =>
    policy.Properties.Roles.some((r: { Ref?: string }) => r.Ref === roleId) ? policy.Properties.PolicyDocument.Statement : [],
  );
}
const actionsOf = (st: Statement): string[] => (Array.isArray(st.Action) ? st.Action : [st.Action]);
const resourcesOf = (st: Statement): unknown[] => (Array.isArray(st.Resource) ? st.Resource : [st.Resource]);
const allActions = (s: Synth, role: HarnessFunctionRole): string[] => statements(s, role).flatMap(actionsOf);
const envOf = (s: Synth, role: HarnessFunctionRole): Record<string, any> => functionProperties(s, role).Environment.Variables;

function nagViolations(stack: Stack): string[] {
  const report = new nag.AwsSolutionsChecks().validateScope(stack);
  return report.violations.map(
    (v) => `${v.severity} ${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
  );
}

describe("Harness: queue and dead-letter queue", () => {
  const s = synthHarness();
  const queues = s.template.findResources("AWS::SQS::Queue");
  const queue = queues[logicalIdOf(s, s.harness.queue)]!.Properties;
  const dlq = queues[logicalIdOf(s, s.harness.deadLetterQueue)]!.Properties;

  it("is FIFO without content-based deduplication (senders give fresh deduplication ids)", () => {
    expect(queue.FifoQueue).toBe(true);
    expect(queue.ContentBasedDeduplication).toBe(false);
    expect(dlq.FifoQueue).toBe(true);
    expect(dlq.ContentBasedDeduplication).toBe(false);
  });

  it("keeps the visibility timeout at least the worker timeout", () => {
    const workerTimeout = functionProperties(s, "worker").Timeout as number;
    expect(workerTimeout).toBe(900);
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(workerTimeout);
    const dlqHandlerTimeout = functionProperties(s, "dlq").Timeout as number;
    expect(dlq.VisibilityTimeout).toBeGreaterThanOrEqual(dlqHandlerTimeout);
  });

  it("moves a doorbell to the DLQ only after 30 receives (well above the attempt budget of 10)", () => {
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { "Fn::GetAtt": [logicalIdOf(s, s.harness.deadLetterQueue), "Arn"] },
      maxReceiveCount: 30,
    });
    const custom = synthHarness({ maxReceiveCount: 50 });
    custom.template.hasResourceProperties("AWS::SQS::Queue", { RedrivePolicy: Match.objectLike({ maxReceiveCount: 50 }) });
  });

  it("encrypts both queues and denies non-TLS access", () => {
    expect(queue.SqsManagedSseEnabled).toBe(true);
    expect(dlq.SqsManagedSseEnabled).toBe(true);
    const policies = Object.values(s.template.findResources("AWS::SQS::QueuePolicy"));
    expect(policies).toHaveLength(2);
    for (const policy of policies) {
      expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({
          Effect: "Deny",
          Condition: { Bool: { "aws:SecureTransport": "false" } },
        }),
      );
    }
  });

  it("refuses a visibility timeout below the worker timeout", () => {
    expect(() => synthHarness({ workerTimeout: Duration.minutes(10), queueVisibilityTimeout: Duration.minutes(5) })).toThrow(
      /queueVisibilityTimeout/,
    );
  });
});

describe("Harness: functions", () => {
  const s = synthHarness();

  it("runs all four on nodejs22.x / arm64 with the harness environment", () => {
    s.template.resourceCountIs("AWS::Lambda::Function", 4);
    for (const role of HARNESS_FUNCTION_ROLES) {
      const props = functionProperties(s, role);
      expect(props.Runtime).toBe("nodejs22.x");
      expect(props.Architectures).toEqual(["arm64"]);
      expect(props.PackageType).toBeUndefined();
      const env = props.Environment.Variables;
      for (const name of [HARNESS_ENV.tableName, HARNESS_ENV.bucketName, HARNESS_ENV.queueUrl]) {
        expect(env[name], `${role} ${name}`).toBeDefined();
      }
      expect(env[HARNESS_ENV.serviceName]).toBe("resolute-harness");
      expect(env[HARNESS_ENV.logLevel]).toBe("INFO");
    }
  });

  it("gives the http function a stream limit that ends well before its timeout", () => {
    const props = functionProperties(s, "http");
    const streamMaxMs = Number(props.Environment.Variables[HARNESS_ENV.streamMaxMs]);
    expect(streamMaxMs).toBe(5 * 60_000);
    expect(props.Timeout * 1000 - streamMaxMs).toBeGreaterThanOrEqual(10_000);
    expect(() => synthHarness({ streamMaxDuration: Duration.minutes(10), httpTimeout: Duration.minutes(10) })).toThrow(
      /streamMaxDuration/,
    );
  });

  it("exposes http through a streaming function URL with IAM auth by default", () => {
    s.template.resourceCountIs("AWS::Lambda::Url", 1);
    s.template.hasResourceProperties("AWS::Lambda::Url", {
      InvokeMode: "RESPONSE_STREAM",
      AuthType: "AWS_IAM",
      TargetFunctionArn: { "Fn::GetAtt": [logicalIdOf(s, s.harness.functions.http), "Arn"] },
    });
    expect(functionProperties(s, "http").Environment.Variables[HARNESS_ENV.urlAuth]).toBe("AWS_IAM");

    const open = synthHarness({ urlAuthType: FunctionUrlAuthType.NONE, secrets: BEARER_TOKEN });
    open.template.hasResourceProperties("AWS::Lambda::Url", { InvokeMode: "RESPONSE_STREAM", AuthType: "NONE" });
    expect(functionProperties(open, "http").Environment.Variables[HARNESS_ENV.urlAuth]).toBe("NONE");
  });

  it("lets only granted principals call the IAM-protected URL, and only through the URL", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "Grant");
    const harness = new Harness(stack, "Harness", { agentsEntry: cdkFixture("agents.ts"), handlerEntries });
    const caller = new Role(stack, "Caller", { assumedBy: new AccountRootPrincipal() });
    harness.grantInvoke(caller);
    const t = Template.fromStack(stack);
    for (const permission of Object.values(t.findResources("AWS::Lambda::Permission"))) {
      expect(permission.Properties.Principal).not.toBe("*");
    }
    const callerId = stack.resolve((caller.node.defaultChild as CfnRole).logicalId);
    const granted = Object.values(t.findResources("AWS::IAM::Policy"))
      .filter((p) => p.Properties.Roles.some((r: { Ref?: string }) => r.Ref === callerId))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(granted).toEqual([
      expect.objectContaining({
        Action: "lambda:InvokeFunctionUrl",
        Condition: { StringEquals: { "lambda:FunctionUrlAuthType": "AWS_IAM" } },
      }),
      expect.objectContaining({ Action: "lambda:InvokeFunction", Condition: { Bool: { "lambda:InvokedViaFunctionUrl": true } } }),
    ]);
  });

  it("feeds the worker from the queue, one message at a time with partial failures; the DLQ has no event source", () => {
    const mappings = Object.values(s.template.findResources("AWS::Lambda::EventSourceMapping")).map((m) => m.Properties);
    // One mapping: a second one's pollers would bill ~650,000 empty receives a month on the DLQ.
    expect(mappings).toHaveLength(1);
    const byFunction = (role: HarnessFunctionRole) =>
      mappings.find((m) => m.FunctionName.Ref === logicalIdOf(s, s.harness.functions[role]));
    expect(byFunction("worker")).toMatchObject({
      BatchSize: 1,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      EventSourceArn: { "Fn::GetAtt": [logicalIdOf(s, s.harness.queue), "Arn"] },
    });
    expect(byFunction("dlq")).toBeUndefined();
  });

  it("drains the DLQ with the dlq function on the sweep schedule, told the DLQ's URL", () => {
    s.template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(1 minute)",
      Targets: Match.arrayWith([Match.objectLike({ Arn: { "Fn::GetAtt": [logicalIdOf(s, s.harness.functions.dlq), "Arn"] } })]),
    });
    expect(envOf(s, "dlq")[HARNESS_ENV.deadLetterQueueUrl]).toEqual({ Ref: logicalIdOf(s, s.harness.deadLetterQueue) });
    for (const role of ["http", "worker", "sweeper"] as const) expect(envOf(s, role)[HARNESS_ENV.deadLetterQueueUrl], role).toBeUndefined();
    expect(allActions(s, "dlq")).toEqual(expect.arrayContaining(["sqs:ReceiveMessage", "sqs:DeleteMessage"]));
  });

  it("runs the worker up to 15 minutes by default, configurable, with optional reserved concurrency", () => {
    expect(functionProperties(s, "worker").ReservedConcurrentExecutions).toBeUndefined();
    const custom = synthHarness({ workerTimeout: Duration.minutes(5), workerReservedConcurrency: 20, workerMaxConcurrency: 10 });
    const worker = functionProperties(custom, "worker");
    expect(worker.Timeout).toBe(300);
    expect(worker.ReservedConcurrentExecutions).toBe(20);
    custom.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", { ScalingConfig: { MaximumConcurrency: 10 } });
  });

  it("runs the sweeper on an EventBridge schedule, every minute by default", () => {
    s.template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(1 minute)",
      Targets: Match.arrayWith([Match.objectLike({ Arn: { "Fn::GetAtt": [logicalIdOf(s, s.harness.functions.sweeper), "Arn"] } })]),
    });
    synthHarness({ sweeperRate: Duration.minutes(5) }).template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(5 minutes)",
    });
  });

  it("keeps nothing running while idle: no provisioned concurrency, no VPC, no containers", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      const props = functionProperties(s, role);
      expect(props.VpcConfig).toBeUndefined();
      expect(props.PackageType).not.toBe("Image");
    }
    const types = new Set(Object.values(s.template.toJSON().Resources).map((r: any) => r.Type as string));
    for (const type of types) {
      expect(type).not.toMatch(/^AWS::(EC2|ECS|EKS|ElasticLoadBalancingV2|RDS|ElastiCache)::/);
    }
    for (const alias of Object.values(s.template.findResources("AWS::Lambda::Alias"))) {
      expect(alias.Properties.ProvisionedConcurrencyConfig).toBeUndefined();
    }
    for (const version of Object.values(s.template.findResources("AWS::Lambda::Version"))) {
      expect(version.Properties.ProvisionedConcurrencyConfig).toBeUndefined();
    }
  });
});

describe("Harness: table and bucket", () => {
  const s = synthHarness();

  it("declares the DynamoDB adapter's key schema and indexes, on demand, with PITR and retention", () => {
    const tables = s.template.findResources("AWS::DynamoDB::GlobalTable");
    const [table] = Object.values(tables);
    expect(table!.DeletionPolicy).toBe("Retain");
    const props = table!.Properties;
    expect(props.BillingMode).toBe("PAY_PER_REQUEST");
    expect(props.KeySchema).toEqual([
      { AttributeName: HARNESS_TABLE.partitionKey, KeyType: "HASH" },
      { AttributeName: HARNESS_TABLE.sortKey, KeyType: "RANGE" },
    ]);
    const indexes = Object.values(HARNESS_TABLE.indexes);
    expect(props.GlobalSecondaryIndexes).toHaveLength(indexes.length);
    for (const index of indexes) {
      expect(props.GlobalSecondaryIndexes).toContainEqual({
        IndexName: index.indexName,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: "HASH" },
          { AttributeName: index.sortKey, KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: index.projection },
      });
    }
    for (const definition of props.AttributeDefinitions) expect(definition.AttributeType).toBe("S");
    expect(props.Replicas[0].PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(props.Replicas[0].DeletionProtectionEnabled).toBe(true);
    // Lean history (ADR 0034): delta-only log items expire by it.
    expect(props.TimeToLiveSpecification).toEqual({ AttributeName: HARNESS_TABLE.timeToLiveAttribute, Enabled: true });
  });

  it("can be made disposable", () => {
    const d = synthHarness({ removalPolicy: RemovalPolicy.DESTROY });
    const [table] = Object.values(d.template.findResources("AWS::DynamoDB::GlobalTable"));
    expect(table!.DeletionPolicy).toBe("Delete");
    expect(table!.Properties.Replicas[0].DeletionProtectionEnabled).toBe(false);
    const [bucket] = Object.values(d.template.findResources("AWS::S3::Bucket"));
    expect(bucket!.DeletionPolicy).toBe("Delete");
  });

  it("keeps the bucket private, encrypted, TLS-only and retained", () => {
    const [bucket] = Object.values(s.template.findResources("AWS::S3::Bucket"));
    expect(bucket!.DeletionPolicy).toBe("Retain");
    expect(bucket!.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket!.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault).toEqual({
      SSEAlgorithm: "AES256",
    });
    expect(bucket!.Properties.LifecycleConfiguration.Rules).toContainEqual(
      expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: "Enabled" }),
    );
    s.template.hasResourceProperties("AWS::S3::BucketPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
        ]),
      },
    });
  });
});

describe("Harness: least privilege", () => {
  const s = synthHarness();
  const tableArn = { "Fn::GetAtt": [logicalIdOf(s, s.harness.table), "Arn"] };
  const bucketArn = { "Fn::GetAtt": [logicalIdOf(s, s.harness.bucket), "Arn"] };
  const bucketObjects = { "Fn::Join": ["", [bucketArn, "/*"]] };
  const objectsUnder = (prefix: string) => ({ "Fn::Join": ["", [bucketArn, `/${prefix}*`]] });

  it("attaches no managed policy to any role", () => {
    for (const role of Object.values(s.template.findResources("AWS::IAM::Role"))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it("grants each function exactly the actions its code calls, on the resources it calls them on (nothing unused creeps back)", () => {
    const table = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"];
    const objects = ["s3:GetObject", "s3:PutObject", "s3:ListBucket"];
    const logs = ["logs:CreateLogStream", "logs:PutLogEvents"];
    const expected: Record<HarnessFunctionRole, string[]> = {
      // + completing a direct upload (uploads/*), deleting a conversation (BatchWriteItem delete requests, blobs/ and checkpoints/)
      http: [...table, ...objects, "s3:DeleteObject", "dynamodb:BatchWriteItem", "sqs:SendMessage", ...logs],
      // + the event source's pollers (Receive, Delete, GetQueueAttributes) and the lease/backoff visibility changes
      worker: [...table, ...objects, "sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility", ...logs],
      // + the drain: a short receive and a delete per handled letter, on the DLQ
      dlq: [...table, ...objects, "sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", ...logs],
      sweeper: [...table, ...objects, "sqs:SendMessage", ...logs],
    };
    const sorted = (actions: string[]) => [...new Set(actions)].sort();
    for (const role of HARNESS_FUNCTION_ROLES) expect(sorted(allActions(s, role)), role).toEqual(sorted(expected[role]));
    const retained = synthHarness({ conversationRetention: Duration.days(30) });
    expect(sorted(allActions(retained, "sweeper"))).toEqual(sorted([...expected.sweeper, "dynamodb:BatchWriteItem", "s3:DeleteObject"]));
    for (const role of ["http", "worker", "dlq"] as const) expect(sorted(allActions(retained, role)), role).toEqual(sorted(expected[role]));
    // Where each SQS action applies: the work queue, and for the dlq function's drain the DLQ only.
    const queueArn = { "Fn::GetAtt": [logicalIdOf(s, s.harness.queue), "Arn"] };
    const dlqArn = { "Fn::GetAtt": [logicalIdOf(s, s.harness.deadLetterQueue), "Arn"] };
    const sqsOn = (role: HarnessFunctionRole, action: string) => statements(s, role).filter((x) => actionsOf(x).includes(action)).flatMap(resourcesOf);
    expect(sqsOn("dlq", "sqs:ReceiveMessage")).toEqual([dlqArn]);
    expect(sqsOn("dlq", "sqs:DeleteMessage")).toEqual([dlqArn]);
    expect(sqsOn("worker", "sqs:GetQueueAttributes")).toEqual([queueArn]);
    expect(sqsOn("worker", "sqs:ChangeMessageVisibility")).toEqual([queueArn]);
  });

  it("keeps the worker's event source mapping's logical id (an upgrade does not replace it), after its role's policy", () => {
    const mappings = s.template.findResources("AWS::Lambda::EventSourceMapping");
    expect(Object.keys(mappings)).toEqual([expect.stringMatching(/^HarnessWorkerFunctionSqsEventSourceTestHarnessQueue[0-9A-F]{8}[0-9A-F]{8}$/)]);
    const worker = s.template.findResources("AWS::Lambda::Function")[logicalIdOf(s, s.harness.functions.worker)]!;
    expect(worker.DependsOn).toEqual(expect.arrayContaining([expect.stringMatching(/^HarnessWorkerRoleDefaultPolicy/)]));
  });

  it("grants every function the ConditionCheckItem a head move uses (ADR 0035: a settlement leaving its session idle)", () => {
    // DynamoDB Local does not check IAM: without this grant every such settlement fails on AWS.
    for (const role of HARNESS_FUNCTION_ROLES) expect(allActions(s, role), role).toContain("dynamodb:ConditionCheckItem");
  });

  it("grants no wildcard action and no table, bucket or queue administration", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      const actions = allActions(s, role);
      for (const action of actions) expect(action, `${role}: ${action}`).not.toContain("*");
      // Appends only ever put (ADR 0009); deleting a conversation (ADR 0034) is the HTTP function's
      // alone (and the sweeper's with conversationRetention, tested below).
      if (role !== "http") for (const forbidden of ["dynamodb:BatchWriteItem", "dynamodb:DeleteItem"]) expect(actions, role).not.toContain(forbidden);
      for (const forbidden of [
        "dynamodb:DeleteTable",
        "dynamodb:UpdateTable",
        "dynamodb:CreateBackup",
        "dynamodb:Scan",
        "s3:DeleteBucket",
        "s3:PutBucketPolicy",
        "sqs:DeleteQueue",
        "sqs:PurgeQueue",
        "sqs:SetQueueAttributes",
      ]) {
        expect(actions, role).not.toContain(forbidden);
      }
      for (const st of statements(s, role)) expect(resourcesOf(st), role).not.toContain("*");
    }
  });

  it("lets only the http function read the console's activity index, with Query alone (ADR 0054)", () => {
    const activityIndex = { "Fn::Join": ["", [tableArn, `/index/${HARNESS_TABLE.indexes.byActivity.indexName}`]] };
    const on = (role: HarnessFunctionRole) => statements(s, role).filter((x) => resourcesOf(x).some((r) => JSON.stringify(r) === JSON.stringify(activityIndex)));
    expect(on("http").flatMap(actionsOf)).toEqual(["dynamodb:Query"]);
    for (const role of ["worker", "dlq", "sweeper"] as const) expect(on(role), role).toEqual([]);
  });

  it("lets the http function write the table and the queue but not read the queue", () => {
    const actions = allActions(s, "http");
    expect(actions).toEqual(expect.arrayContaining(["dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage", "s3:PutObject"]));
    expect(actions).not.toContain("sqs:ReceiveMessage");
    expect(actions).not.toContain("bedrock:InvokeModel");
  });

  it("scopes table grants to the harness table and its indexes", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      for (const st of statements(s, role).filter((x) => actionsOf(x).some((a) => a.startsWith("dynamodb:")))) {
        for (const resource of resourcesOf(st)) {
          const ok =
            JSON.stringify(resource) === JSON.stringify(tableArn) ||
            Object.values(HARNESS_TABLE.indexes).some(
              (i) => JSON.stringify(resource) === JSON.stringify({ "Fn::Join": ["", [tableArn, `/index/${i.indexName}`]] }),
            );
          expect(ok, `${role}: ${JSON.stringify(resource)}`).toBe(true);
        }
      }
    }
  });

  it("names only the harness bucket in every S3 statement (the worker cannot read other buckets)", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      const s3 = statements(s, role).filter((x) => actionsOf(x).some((a) => a.startsWith("s3:")));
      expect(s3.length, role).toBeGreaterThan(0);
      for (const st of s3) {
        for (const resource of resourcesOf(st)) {
          expect([bucketArn, bucketObjects, ...["uploads/", "blobs/", "checkpoints/"].map(objectsUnder)], `${role}: ${JSON.stringify(resource)}`).toContainEqual(resource);
        }
      }
    }
  });

  it("lets only the http function delete objects: a direct upload's staged object under uploads/, a deleted conversation's blobs and checkpoints (ADR 0034)", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      const deletes = statements(s, role).filter((x) => actionsOf(x).includes("s3:DeleteObject")).flatMap(resourcesOf);
      const allowed = role === "http" ? ["uploads/", "blobs/", "checkpoints/"] : [];
      expect(deletes, role).toEqual(expect.arrayContaining(allowed.map(objectsUnder)));
      expect(deletes.length, role).toBe(allowed.length);
    }
    const tableDeletes = statements(s, "http").filter((x) => actionsOf(x).includes("dynamodb:BatchWriteItem"));
    expect(tableDeletes.flatMap(resourcesOf)).toEqual([{ "Fn::GetAtt": [logicalIdOf(s, s.harness.table), "Arn"] }]);
  });

  it("lets the worker consume its queue, and the dlq function only the DLQ", () => {
    const queueArn = { "Fn::GetAtt": [logicalIdOf(s, s.harness.queue), "Arn"] };
    const dlqArn = { "Fn::GetAtt": [logicalIdOf(s, s.harness.deadLetterQueue), "Arn"] };
    const receivesFrom = (role: HarnessFunctionRole) =>
      statements(s, role)
        .filter((x) => actionsOf(x).includes("sqs:ReceiveMessage"))
        .flatMap(resourcesOf);
    expect(receivesFrom("worker")).toEqual([queueArn]);
    expect(allActions(s, "worker")).toContain("sqs:ChangeMessageVisibility");
    expect(receivesFrom("dlq")).toEqual([dlqArn]);
    expect(receivesFrom("sweeper")).toEqual([]);
    for (const role of HARNESS_FUNCTION_ROLES) {
      const sends = statements(s, role)
        .filter((x) => actionsOf(x).includes("sqs:SendMessage"))
        .flatMap(resourcesOf);
      expect(sends, role).toEqual([queueArn]);
    }
  });

  it("grants Bedrock to the worker only, and only when asked", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      expect(allActions(s, role).some((a) => a.startsWith("bedrock:")), role).toBe(false);
    }
    const withBedrock = synthHarness({ bedrock: { resources: ["arn:aws:bedrock:eu-west-1::foundation-model/some.model-v1"] } });
    const bedrock = statements(withBedrock, "worker").filter((x) => actionsOf(x).some((a) => a.startsWith("bedrock:")));
    expect(bedrock).toHaveLength(1);
    expect(actionsOf(bedrock[0]!).sort()).toEqual(["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]);
    expect(bedrock[0]!.Resource).toBe("arn:aws:bedrock:eu-west-1::foundation-model/some.model-v1");
    for (const role of ["http", "dlq", "sweeper"] as const) {
      expect(allActions(withBedrock, role).some((a) => a.startsWith("bedrock:")), role).toBe(false);
    }
  });

  it("turns the AWS SDK's own retries off where agents run when Bedrock is on (AWS_MAX_ATTEMPTS, overridable)", () => {
    for (const role of HARNESS_FUNCTION_ROLES) expect(envOf(s, role).AWS_MAX_ATTEMPTS, role).toBeUndefined();
    const on = synthHarness({ bedrock: true });
    for (const role of ["worker", "dlq"] as const) expect(envOf(on, role).AWS_MAX_ATTEMPTS, role).toBe("1");
    for (const role of ["http", "sweeper"] as const) expect(envOf(on, role).AWS_MAX_ATTEMPTS, role).toBeUndefined();
    expect(envOf(synthHarness({ bedrock: { sdkMaxAttempts: 3 } }), "worker").AWS_MAX_ATTEMPTS).toBe("3");
    expect(envOf(synthHarness({ bedrock: true, environment: { AWS_MAX_ATTEMPTS: "2" } }), "worker").AWS_MAX_ATTEMPTS, "the user's environment wins").toBe("2");
    expect(() => synthHarness({ bedrock: { sdkMaxAttempts: 0 } })).toThrow(/sdkMaxAttempts must be a positive integer/);
  });
});

describe("Harness: alarms", () => {
  it("creates no alarm by default: $0.10 a month each, and nobody to tell", () => {
    synthHarness().template.resourceCountIs("AWS::CloudWatch::Alarm", 0);
  });

  it("alarms on DLQ arrivals, a dead letter left undrained for 10 minutes, and worker errors", () => {
    const s = synthHarness({ alarms: true });
    const alarms = Object.values(s.template.findResources("AWS::CloudWatch::Alarm")).map((a) => a.Properties);
    expect(alarms.map((a) => a.MetricName).sort()).toEqual(
      ["ApproximateAgeOfOldestMessage", "Errors", "NumberOfMessagesReceived"].sort(),
    );
    for (const alarm of alarms) {
      expect(alarm.Threshold).toBe(alarm.MetricName === "ApproximateAgeOfOldestMessage" ? 600 : 0);
      expect(alarm.ComparisonOperator).toBe("GreaterThanThreshold");
      expect(alarm.AlarmActions).toBeUndefined();
    }
    const dlqName = { "Fn::GetAtt": [logicalIdOf(s, s.harness.deadLetterQueue), "QueueName"] };
    for (const metric of ["ApproximateAgeOfOldestMessage", "NumberOfMessagesReceived"]) {
      expect(alarms.find((a) => a.MetricName === metric)!.Dimensions).toEqual([{ Name: "QueueName", Value: dlqName }]);
    }
  });

  it("are on when a topic is given, notify it, optionally watch throttles; can be turned off", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "Topic");
    const topic = new Topic(stack, "Alarms");
    new Harness(stack, "Harness", {
      agentsEntry: cdkFixture("agents.ts"),
      handlerEntries,
      alarmTopic: topic,
      workerThrottleAlarm: true,
    });
    const alarms = Object.values(Template.fromStack(stack).findResources("AWS::CloudWatch::Alarm")).map((a) => a.Properties);
    expect(alarms).toHaveLength(4);
    expect(alarms.map((a) => a.MetricName)).toContain("Throttles");
    for (const alarm of alarms) {
      expect(alarm.AlarmActions).toEqual([{ Ref: stack.resolve((topic.node.defaultChild as CfnRole).logicalId) }]);
    }
    synthHarness({ alarms: false }).template.resourceCountIs("AWS::CloudWatch::Alarm", 0);
  });
});

describe("Harness: API Gateway option", () => {
  const s = synthHarness({ apiGateway: true });

  it("streams every route through a REST API with IAM auth and no function URL", () => {
    s.template.resourceCountIs("AWS::Lambda::Url", 0);
    const methods = Object.values(s.template.findResources("AWS::ApiGateway::Method")).map((m) => m.Properties);
    expect(methods.length).toBeGreaterThanOrEqual(2);
    for (const method of methods) {
      expect(method.HttpMethod).toBe("ANY");
      expect(method.AuthorizationType).toBe("AWS_IAM");
      expect(method.Integration.ResponseTransferMode).toBe("STREAM");
      expect(JSON.stringify(method.Integration.Uri)).toContain("response-streaming-invocations");
    }
    s.template.hasResourceProperties("AWS::ApiGateway::Stage", {
      MethodSettings: Match.arrayWith([Match.objectLike({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 })]),
    });
  });

  it("writes no access logs unless asked (they need the account's API Gateway CloudWatch role, unset in new accounts: ADR 0044), and passes cdk-nag either way", () => {
    const [stage] = Object.values(s.template.findResources("AWS::ApiGateway::Stage"));
    expect(stage!.Properties.AccessLogSetting).toBeUndefined();
    s.template.resourceCountIs("AWS::ApiGateway::Account", 0);
    expect(nagViolations(s.stack)).toEqual([]);
    const logged = synthHarness({ apiGateway: { accessLogs: true } });
    logged.template.hasResourceProperties("AWS::ApiGateway::Stage", { AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }) });
    logged.template.resourceCountIs("AWS::ApiGateway::Account", 0);
    expect(nagViolations(logged.stack)).toEqual([]);
  });

  it("passes request bodies as binary (base64 to the handler), with the preflights converting to text so their mock integration still answers", () => {
    const [api] = Object.values(s.template.findResources("AWS::ApiGateway::RestApi"));
    expect(api!.Properties.BinaryMediaTypes).toEqual(["*/*"]);
    const cors = synthHarness({ apiGateway: true, corsOrigins: ["https://app.example.com"] });
    const preflights = Object.values(cors.template.findResources("AWS::ApiGateway::Method"))
      .map((m) => m.Properties)
      .filter((m) => m.HttpMethod === "OPTIONS");
    expect(preflights).toHaveLength(2);
    for (const m of preflights) {
      expect(m.Integration.ContentHandling).toBe("CONVERT_TO_TEXT");
      expect(m.Integration.IntegrationResponses[0].ContentHandling).toBe("CONVERT_TO_TEXT");
    }
  });
});

describe("Harness: lean history (deltaRetention)", () => {
  it("gives the worker the retention when set, and refuses one under 15 minutes", () => {
    expect(envOf(synthHarness(), "worker")[HARNESS_ENV.deltaRetentionMs], "the store's default of 1 h").toBeUndefined();
    const s = synthHarness({ deltaRetention: Duration.hours(6) });
    expect(envOf(s, "worker")[HARNESS_ENV.deltaRetentionMs]).toBe(String(6 * 3_600_000));
    expect(() => synthHarness({ deltaRetention: Duration.minutes(5) })).toThrow(/deltaRetention must be at least 15 minutes/);
  });
});

describe("Harness: conversation retention (conversationRetention)", () => {
  it("gives every function the retention (their stores keep the idle index) and the sweeper the deletion, nothing by default, and refuses one under an hour", () => {
    const plain = synthHarness();
    expect(envOf(plain, "sweeper")[HARNESS_ENV.conversationRetentionMs]).toBeUndefined();
    expect(allActions(plain, "sweeper")).not.toContain("dynamodb:BatchWriteItem");
    const s = synthHarness({ conversationRetention: Duration.days(90) });
    expect(envOf(s, "sweeper")[HARNESS_ENV.conversationRetentionMs]).toBe(String(90 * 86_400_000));
    for (const role of ["http", "worker", "dlq"] as const) expect(envOf(s, role)[HARNESS_ENV.conversationRetentionMs], role).toBe(String(90 * 86_400_000));
    expect(allActions(s, "sweeper")).toEqual(expect.arrayContaining(["dynamodb:BatchWriteItem", "s3:DeleteObject"]));
    expect(allActions(s, "worker")).not.toContain("dynamodb:BatchWriteItem");
    expect(() => synthHarness({ conversationRetention: Duration.minutes(30) })).toThrow(/conversationRetention must be at least an hour/);
  });
});

describe("Harness: browser origins (corsOrigins)", () => {
  const origins = ["https://app.example.com", "http://localhost:5173"];

  it("has no CORS and no allowed origin by default", () => {
    const s = synthHarness();
    expect(s.template.findResources("AWS::Lambda::Url")[logicalIdOf(s, s.harness.functionUrl!)]!.Properties.Cors).toBeUndefined();
    expect(s.template.findResources("AWS::S3::Bucket")[logicalIdOf(s, s.harness.bucket)]!.Properties.CorsConfiguration).toBeUndefined();
    expect(functionProperties(s, "http").Environment.Variables[HARNESS_ENV.corsOrigins]).toBeUndefined();
  });

  it("gives the origins to the app and to the function URL, which answers the preflights", () => {
    const s = synthHarness({ corsOrigins: origins });
    s.template.hasResourceProperties("AWS::Lambda::Url", {
      Cors: {
        AllowOrigins: origins,
        AllowMethods: ["GET", "POST"],
        AllowHeaders: Match.arrayWith(["content-type", "authorization", "last-event-id", "x-amz-date", "x-amz-security-token"]),
        MaxAge: 3600,
      },
    });
    expect(functionProperties(s, "http").Environment.Variables[HARNESS_ENV.corsOrigins]).toBe(origins.join(","));
    for (const role of ["worker", "dlq", "sweeper"] as const) {
      expect(functionProperties(s, role).Environment.Variables[HARNESS_ENV.corsOrigins], role).toBeUndefined();
    }
  });

  it("lets the origins post a direct upload's form to the bucket (another origin) and read S3's answer, front door or not", () => {
    for (const apiGateway of [false, true]) {
      const s = synthHarness({ corsOrigins: origins, apiGateway });
      expect(s.template.findResources("AWS::S3::Bucket")[logicalIdOf(s, s.harness.bucket)]!.Properties.CorsConfiguration, `apiGateway: ${apiGateway}`).toEqual({
        CorsRules: [{ Id: "direct-uploads", AllowedMethods: ["POST"], AllowedOrigins: origins, MaxAge: 3600 }],
      });
    }
  });

  it("lets the REST API answer the preflights without auth, and passes cdk-nag", () => {
    const s = synthHarness({ corsOrigins: origins, apiGateway: true });
    const methods = Object.values(s.template.findResources("AWS::ApiGateway::Method")).map((m) => m.Properties);
    const preflights = methods.filter((m) => m.HttpMethod === "OPTIONS");
    expect(preflights).toHaveLength(2);
    for (const m of preflights) {
      expect(m.AuthorizationType).toBe("NONE");
      expect(m.Integration.Type).toBe("MOCK");
    }
    for (const m of methods.filter((m) => m.HttpMethod !== "OPTIONS")) expect(m.AuthorizationType).toBe("AWS_IAM");
    expect(JSON.stringify(preflights)).toContain("https://app.example.com");
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it("refuses what is not an origin", () => {
    for (const bad of ["app.example.com", "https://app.example.com/", "https://a.com,https://b.com"]) {
      expect(() => synthHarness({ corsOrigins: [bad] }), bad).toThrow(/corsOrigins/);
    }
  });
});

describe("Harness: cdk-nag AwsSolutions", () => {
  it("has no unacknowledged finding (errors and warnings) in the default shape", () => {
    expect(nagViolations(synthHarness().stack)).toEqual([]);
  });

  it("has none with Bedrock, the API Gateway and an open function URL either", () => {
    expect(nagViolations(synthHarness({ bedrock: true }).stack)).toEqual([]);
    expect(nagViolations(synthHarness({ apiGateway: true }).stack)).toEqual([]);
    expect(nagViolations(synthHarness({ urlAuthType: FunctionUrlAuthType.NONE, secrets: BEARER_TOKEN }).stack)).toEqual([]);
  });

  it("acknowledges the default Bedrock grant as the policy holds it, in an environment-agnostic stack and in one with a concrete account and region", () => {
    // The CDK CLI sets CDK_DEFAULT_ACCOUNT/REGION whenever it has credentials: the policy then
    // holds the literal region and account, and the acknowledgement must name those.
    for (const env of [true, false]) {
      const s = synthHarness({ bedrock: true }, { env });
      expect(nagViolations(s.stack), `env: ${env}`).toEqual([]);
      const [bedrock] = statements(s, "worker").filter((x) => actionsOf(x).includes("bedrock:InvokeModel"));
      const granted = JSON.stringify(s.stack.resolve(bedrock!.Resource));
      expect(granted, `env: ${env}`).toContain(env ? "eu-west-1:111122223333:inference-profile/*" : ":inference-profile/*");
      expect(granted, `env: ${env}: application inference profiles too`).toContain(":application-inference-profile/*");
    }
  });

  it("still reports a finding the harness did not accept", () => {
    // A user-given wildcard Bedrock resource is not acknowledged by the construct.
    const violations = nagViolations(synthHarness({ bedrock: { resources: ["arn:aws:bedrock:*::foundation-model/*"] } }).stack);
    expect(violations).toEqual([expect.stringContaining("AwsSolutions-IAM5[Resource::arn:aws:bedrock:*::foundation-model/*]")]);
  });
});

describe("Harness: what would fail after deployment is refused at synth (HarnessPropsInvalid)", () => {
  it("refuses urlAuthType NONE without a bearer token, callbacks or not: the http function refuses to serve an open URL, so every cold start would fail", () => {
    const open = thrown(() => synthHarness({ urlAuthType: FunctionUrlAuthType.NONE }));
    expect(open).toBeInstanceOf(HarnessPropsInvalid);
    expect(open).toMatchObject({ code: "harness_props_invalid", prop: "urlAuthType", message: expect.stringMatching(/NONE with no HARNESS_BEARER_TOKEN and no `auth`.*pass the token in `secrets`/) });
    const callbacks = thrown(() => synthHarness({ urlAuthType: FunctionUrlAuthType.NONE, callbacks: { bearerToken: { parameterName: "/harness/callback-token" } } }));
    expect(callbacks).toMatchObject({ prop: "urlAuthType", message: expect.stringContaining("callbacks.bearerToken opens only the callback route") });
    // With the token, or open on purpose, it synthesizes.
    synthHarness({ urlAuthType: FunctionUrlAuthType.NONE, secrets: BEARER_TOKEN, callbacks: { bearerToken: { parameterName: "/harness/callback-token" } } });
    synthHarness({ urlAuthType: FunctionUrlAuthType.NONE, environment: { HARNESS_ALLOW_UNAUTHENTICATED: "true" } });
  });

  it("refuses an API Gateway that authorizes nothing (urlAuthType NONE, no authorizer) without a bearer token: that would be a public API", () => {
    const open = thrown(() => synthHarness({ apiGateway: true, urlAuthType: FunctionUrlAuthType.NONE }));
    expect(open).toBeInstanceOf(HarnessPropsInvalid);
    expect(open).toMatchObject({ prop: "apiGateway", message: expect.stringMatching(/authorizes no route .* give apiGateway.authorizer, or keep urlAuthType AWS_IAM/) });
  });

  it("passes cdk-nag with an API Gateway behind the app's bearer token (urlAuthType NONE): APIG4 is acknowledged with that reason", () => {
    // Behind the app's token the ANY methods are open at the API and cdk-nag's APIG4 is acknowledged with that reason.
    const s = synthHarness({ apiGateway: true, urlAuthType: FunctionUrlAuthType.NONE, secrets: BEARER_TOKEN });
    const methods = Object.values(s.template.findResources("AWS::ApiGateway::Method")).map((m) => m.Properties);
    expect(methods.map((m) => m.AuthorizationType)).toEqual(["NONE", "NONE"]);
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it("refuses workerMaxConcurrency above workerReservedConcurrency (Lambda would throttle the surplus, each throttle a receive toward the DLQ) and outside 2–1000", () => {
    const over = thrown(() => synthHarness({ workerReservedConcurrency: 5, workerMaxConcurrency: 10 }));
    expect(over).toBeInstanceOf(HarnessPropsInvalid);
    expect(over).toMatchObject({ prop: "workerMaxConcurrency", message: expect.stringContaining("10 is above workerReservedConcurrency (5)") });
    expect(thrown(() => synthHarness({ workerMaxConcurrency: 1 }))).toMatchObject({ prop: "workerMaxConcurrency" });
    synthHarness({ workerReservedConcurrency: 10, workerMaxConcurrency: 10 });
  });

  it("refuses an environment Lambda would refuse: over 4,096 bytes as Lambda measures it (the variables as compact JSON)", () => {
    const base = synthHarness();
    // The largest environment decides; pad it to exactly the limit, then one byte over.
    const largest = Math.max(...HARNESS_FUNCTION_ROLES.map((role) => lambdaEnvironmentBytes(base.harness.functions[role])));
    const pad = (extra: number) => ({ PAD: "x".repeat(LAMBDA_ENVIRONMENT_MAX_BYTES - largest - '"PAD":"",'.length + extra) });
    const fits = synthHarness({ environment: pad(0) });
    expect(Math.max(...HARNESS_FUNCTION_ROLES.map((role) => lambdaEnvironmentBytes(fits.harness.functions[role])))).toBe(LAMBDA_ENVIRONMENT_MAX_BYTES);
    const over = thrown(() => synthHarness({ environment: pad(1) }));
    expect(over).toBeInstanceOf(HarnessPropsInvalid);
    expect(over).toMatchObject({ prop: "environment", message: expect.stringMatching(/function's environment is at least 4097 bytes as Lambda measures it/) });
    // What Lambda measures: the literal variables as compact JSON (a value known only at deployment counts at its shortest).
    const fn = fits.harness.functions.http;
    const literal = Object.fromEntries(Object.entries(functionProperties(fits, "http").Environment.Variables).filter(([, v]) => typeof v === "string"));
    expect(lambdaEnvironmentBytes(fn)).toBeGreaterThan(Buffer.byteLength(JSON.stringify(literal)));
  });

  it("checks again at synth what is added to a function's environment after the construct", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "Later");
    const harness = new Harness(stack, "Harness", { agentsEntry: cdkFixture("agents.ts"), handlerEntries });
    harness.functions.worker.addEnvironment("LATER", "x".repeat(LAMBDA_ENVIRONMENT_MAX_BYTES));
    expect(() => Template.fromStack(stack)).toThrow(/the worker function's environment is at least \d+ bytes/);
  });
});

describe("Harness: agent names for the functions that run no agent", () => {

  it("gives http and sweeper the names discovered from the agents module, worker and dlq none", () => {
    const s = synthHarness();
    expect(s.harness.agentNames).toEqual(["echo"]);
    expect(NAMES_ONLY_ROLES).toEqual(["http", "sweeper"]);
    for (const role of NAMES_ONLY_ROLES) expect(envOf(s, role)[HARNESS_ENV.agentNames], role).toBe("echo");
    for (const role of ["worker", "dlq"] as const) expect(envOf(s, role)[HARNESS_ENV.agentNames], role).toBeUndefined();
  });

  it("takes agentNames as given, without importing the agents module", () => {
    const s = synthHarness({ agentsEntry: cdkFixture("broken-agents.ts"), agentNames: ["writer", "planner"] });
    expect(envOf(s, "http")[HARNESS_ENV.agentNames]).toBe("writer,planner");
    expect(envOf(s, "sweeper")[HARNESS_ENV.agentNames]).toBe("writer,planner");
  });

  it("fails with a message asking for agentNames when the agents module cannot be imported", () => {
    expect(() => synthHarness({ agentsEntry: cdkFixture("broken-agents.ts") })).toThrow(
      /could not discover the agent names by importing .*broken-agents\.ts.*fixture agents module fails at import.*Pass them as the `agentNames` prop/,
    );
  });

  it("refuses at synth an agents module that declares a stdio MCP server (a Lambda function keeps no process beside the worker)", () => {
    expect(() => synthHarness({ agentsEntry: cdkFixture("stdio-mcp-agents.ts") })).toThrow(
      /Harness: agentsEntry: the agents module declares a stdio MCP server \(npx -y some-mcp-server\): .*Serve it over streamable HTTP and give mcpTools its url/,
    );
  });

  it("gives them the agents module's subagentLimits (defaults applied) when it exports any, so a cancel there honours onParentTerminal", () => {
    const s = synthHarness({ agentsEntry: cdkFixture("leave-running-agents.ts") });
    const limits = { maxChildrenPerRun: 3, maxDepth: 1, maxChildWaitMs: 0, onParentTerminal: "leave_running" };
    for (const role of NAMES_ONLY_ROLES) expect(JSON.parse(envOf(s, role)[HARNESS_ENV.subagentLimits]), role).toEqual(limits);
    for (const role of ["worker", "dlq"] as const) expect(envOf(s, role)[HARNESS_ENV.subagentLimits], role).toBeUndefined();
    expect(envOf(synthHarness(), "http")[HARNESS_ENV.subagentLimits], "a module without limits: the defaults").toBeUndefined();
  });

  it("takes subagentLimits as given beside agentNames (nothing is discovered then), and refuses invalid ones", () => {
    const s = synthHarness({ agentsEntry: cdkFixture("broken-agents.ts"), agentNames: ["lead"], subagentLimits: { onParentTerminal: "leave_running" } });
    expect(JSON.parse(envOf(s, "sweeper")[HARNESS_ENV.subagentLimits])).toMatchObject({ onParentTerminal: "leave_running" });
    expect(() => synthHarness({ subagentLimits: { onParentTerminal: "later" as never } })).toThrow(/subagentLimits: subagentLimits.onParentTerminal must be/);
  });

  it("refuses invalid agent names", () => {
    expect(() => synthHarness({ agentNames: [] })).toThrow(/agentNames: no agent names/);
    expect(() => synthHarness({ agentNames: ["a,b"] })).toThrow(/agentNames: invalid agent name "a,b"/);
    expect(() => synthHarness({ agentNames: ["a", "a"] })).toThrow(/agentNames: duplicate/);
  });
});

describe("Harness: handlers", () => {
  it("bundles the handlers shipped beside the construct (src/lambda here, dist/lambda in the package)", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      expect(defaultHandlerEntry(role)).toBe(join(repoRoot, "src", "lambda", `${role}.ts`));
      expect(existsSync(defaultHandlerEntry(role)), role).toBe(true);
    }
  });
});

describe("Harness: source maps", () => {
  it("never starts Node with --enable-source-maps: the bundle maps its stacks when they are formatted (ADR 0037, lambda-bundling.test.ts)", () => {
    const on = synthHarness();
    const off = synthHarness({ sourceMaps: false });
    for (const role of HARNESS_FUNCTION_ROLES) {
      expect(functionProperties(on, role).Environment.Variables.NODE_OPTIONS, role).toBeUndefined();
      expect(functionProperties(off, role).Environment.Variables.NODE_OPTIONS, role).toBeUndefined();
      expect(functionProperties(on, role).Handler, role).toBe(role === "worker" || role === "dlq" ? `${role}.handler` : "index.handler");
    }
  });
});

describe("Harness: construction errors", () => {
  it("refuses a missing agents module", () => {
    expect(() => synthHarness({ agentsEntry: cdkFixture("no-such-agents.ts") })).toThrow(/agentsEntry/);
  });
});

const execFileAsync = promisify(execFile);
const node22 = join(repoRoot, "node_modules/.bin");
const cdkEnv = {
  ...process.env,
  PATH: `${node22}:${process.env.PATH ?? ""}`,
  CDK_DISABLE_CLI_TELEMETRY: "true",
  CDK_DISABLE_VERSION_CHECK: "1",
};

/** Runs `npx cdk synth --quiet` from the repository root (offline), into a scratch directory. */
async function cdkSynth(extraArgs: string[]): Promise<{ out: string; code: number; output: string }> {
  const out = mkdtempSync(join(tmpdir(), "harness-cdk-"));
  try {
    const { stdout, stderr } = await execFileAsync("npx", ["cdk", "synth", "--quiet", "--output", out, ...extraArgs], {
      cwd: repoRoot,
      env: cdkEnv,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { out, code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { out, code: e.code ?? 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

describe("Harness: bundling and synth through the CDK CLI", () => {
  it("bundles a handler with the user's agents behind #harness-agents (ESM, minified) and passes cdk-nag", async () => {
    const { out, code, output } = await cdkSynth([
      "--app",
      "node --disable-warning=ExperimentalWarning test/unit/cdk/fixtures/app.ts",
    ]);
    try {
      expect(code, output).toBe(0);
      // The http and sweeper assets (one: the same bundle); worker and dlq share theirs (`worker.mjs`, `dlq.mjs`).
      const assets = readdirSync(out).filter((name) => name.startsWith("asset.") && existsSync(join(out, name, "index.mjs")));
      expect(assets.length).toBeGreaterThan(0);
      const shared = readdirSync(out).filter((name) => name.startsWith("asset.") && existsSync(join(out, name, "worker.mjs")));
      expect(shared).toHaveLength(1);
      expect(existsSync(join(out, shared[0]!, "dlq.mjs"))).toBe(true);
      // The console's page rides in every asset (ADR 0054): the http function serves it from there.
      for (const asset of [...assets, ...shared]) expect(existsSync(join(out, asset, "console-page", "index.html")), asset).toBe(true);
      const bundle = readFileSync(join(out, assets[0]!, "index.mjs"), "utf8");
      expect(bundle).toContain("harness-infra-fixture-agent");
      expect(bundle).toMatch(/export\s*\{/);
      expect(bundle).not.toContain("#harness-agents");
      // The bundle runs on Node 22 as an ES module and answers with the fixture's agent names.
      const mod = (await import(pathToFileURL(join(out, assets[0]!, "index.mjs")).href)) as { handler: () => Promise<string[]> };
      expect(await mod.handler()).toEqual(["echo"]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 180_000);

  const missing = [
    ...HARNESS_FUNCTION_ROLES.map((role) => `src/lambda/${role}.ts`),
    "examples/basic/agents.ts",
  ].filter((path) => !existsSync(join(repoRoot, path)));
  it.skipIf(missing.length > 0)(
    `synthesizes the basic example app (cdk.json) offline${missing.length > 0 ? ` — skipped: ${missing.join(", ")} not written yet` : ""}`,
    async () => {
      const { out, code, output } = await cdkSynth([]);
      try {
        expect(code, output).toBe(0);
        // What each deployed function's asset holds (the basic example's agents resolve provider
        // models through resolveModel's dynamic imports).
        const template = JSON.parse(readFileSync(join(out, "ResoluteHarnessBasic.template.json"), "utf8")) as {
          Resources: Record<string, { Type: string; Properties: Record<string, any> }>;
        };
        const assetOf = (role: HarnessFunctionRole): string => {
          const prefix = `Harness${role[0]!.toUpperCase()}${role.slice(1)}Function`;
          const [fn] = Object.entries(template.Resources).filter(
            ([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith(prefix),
          );
          expect(fn, role).toBeDefined();
          const key = fn![1].Properties.Code.S3Key as string;
          return join(out, `asset.${key.replace(/\.zip$/, "")}`);
        };
        // The worker and the dlq function run one asset (two entry files); the others each their own.
        expect(assetOf("dlq")).toBe(assetOf("worker"));
        expect(new Set(HARNESS_FUNCTION_ROLES.map(assetOf)).size).toBe(3);
        for (const role of HARNESS_FUNCTION_ROLES) {
          const dir = assetOf(role);
          const entry = readFileSync(join(dir, entryFileOf(role)), "utf8");
          // Result schemas compile on their thread in every function, under its deadline (issue 24).
          expect(existsSync(join(dir, RESULT_SCHEMA_WORKER_FILE)), `${role} asset: ${RESULT_SCHEMA_WORKER_FILE}`).toBe(true);
          for (const marker of PROVIDER_ONLY) expect(entry, `${role} entry: ${marker}`).not.toContain(marker);
          // The session driver (pi's agent loop, ajv) is a lazy chunk: no cold start parses it.
          const coldStart = staticImportClosure(dir, entryFileOf(role)).map((f) => readFileSync(f, "utf8")).join("\n");
          // (booleans: a failure must not print a megabyte of minified code)
          for (const marker of DRIVER_ONLY) expect(coldStart.includes(marker), `${role} cold start holds ${marker}`).toBe(false);
          // The S3 SDK too: the store loads it on its first bucket call, which most invocations never make.
          for (const marker of S3_ONLY) expect(coldStart.includes(marker), `${role} cold start holds ${marker}`).toBe(false);
          const all = codeFiles(dir).map((f) => readFileSync(f, "utf8")).join("\n");
          for (const marker of S3_ONLY) expect(all.includes(marker), `${role} asset holds ${marker}`).toBe(true);
          // The MCP SDK (issue 36): only the http function serves /mcp, and loads it on the first MCP request.
          for (const marker of MCP_SDK_ONLY) expect(coldStart.includes(marker), `${role} cold start holds ${marker}`).toBe(false);
          if (role === "http") for (const marker of MCP_SDK_ONLY) expect(all.includes(marker), `${role} asset holds ${marker}`).toBe(true);
          if (role === "worker") for (const marker of DRIVER_ONLY) expect(all.includes(marker), `${role} asset holds ${marker}`).toBe(true);
          if (NAMES_ONLY_ROLES.includes(role)) {
            // Names only: no provider SDK anywhere in the asset, and not the agents module either.
            for (const marker of PROVIDER_ONLY) expect(all, `${role} asset: ${marker}`).not.toContain(marker);
            expect(all, role).not.toContain("Use the clock tool when asked about the time");
          } else {
            // The agents module is in; each provider SDK is a chunk of its own, loaded on first use.
            expect(all, role).toContain("Use the clock tool when asked about the time");
            for (const marker of PROVIDER_ONLY) expect(all, `${role} asset: ${marker}`).toContain(marker);
            expect(codeFiles(join(dir, "chunks")).length, role).toBeGreaterThan(10);
          }
        }
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    300_000,
  );

  it.skipIf(missing.length > 0)(
    "synthesizes the basic example app with Bedrock for a concrete account and region, as the CLI does with credentials (cdk-nag on)",
    async () => {
      // The CLI sets CDK_DEFAULT_ACCOUNT/REGION whenever it has credentials (here, offline, it
      // has none: the app runs as the CLI starts it, with the variables the CLI would set), so
      // the documented `cdk deploy -c harness:bedrock=true` synthesizes with them. No bundling.
      const out = mkdtempSync(join(tmpdir(), "harness-cdk-env-"));
      try {
        const run = await execFileAsync(join(node22, "node"), ["--disable-warning=ExperimentalWarning", "examples/basic/cdk-app.ts"], {
          cwd: repoRoot,
          env: {
            ...cdkEnv,
            CDK_OUTDIR: out,
            CDK_DEFAULT_ACCOUNT: "111122223333",
            CDK_DEFAULT_REGION: "eu-west-1",
            CDK_CONTEXT_JSON: JSON.stringify({ "harness:bedrock": "true", "aws:cdk:bundling-stacks": [] }),
          },
        }).then(
          () => ({ code: 0, output: "" }),
          (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
        );
        expect(run.code, run.output).toBe(0);
        const template = readFileSync(join(out, "ResoluteHarnessBasic.template.json"), "utf8");
        expect(template).toContain("eu-west-1:111122223333:inference-profile/*");
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it.skipIf(missing.length > 0)(
    "synthesizes the basic example app with users who sign in (-c harness:auth:issuer/audience, or a user pool's ARN behind the API), cdk-nag on; refuses a plain-HTTP issuer",
    async () => {
      // As the CLI starts the app with `-c key=value` (CDK_CONTEXT_JSON), no bundling.
      const synthApp = async (context: Record<string, string>) => {
        const out = mkdtempSync(join(tmpdir(), "harness-cdk-auth-"));
        try {
          const run = await execFileAsync(join(node22, "node"), ["--disable-warning=ExperimentalWarning", "examples/basic/cdk-app.ts"], {
            cwd: repoRoot,
            env: { ...cdkEnv, CDK_OUTDIR: out, CDK_CONTEXT_JSON: JSON.stringify({ ...context, "aws:cdk:bundling-stacks": [] }) },
          }).then(
            () => ({ code: 0, output: "" }),
            (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
          );
          const file = join(out, "ResoluteHarnessBasic.template.json");
          const template = existsSync(file)
            ? (JSON.parse(readFileSync(file, "utf8")) as { Resources: Record<string, { Type: string; Properties: Record<string, any> }> })
            : undefined;
          return { ...run, template };
        } finally {
          rmSync(out, { recursive: true, force: true });
        }
      };
      const resources = (t: { Resources: Record<string, { Type: string; Properties: Record<string, any> }> } | undefined, type: string) =>
        Object.entries(t?.Resources ?? {}).filter(([, r]) => r.Type === type);
      const httpEnv = (t: Parameters<typeof resources>[0]) =>
        resources(t, "AWS::Lambda::Function").find(([id]) => id.startsWith("HarnessHttpFunction"))![1].Properties.Environment.Variables;

      const jwt = await synthApp({ "harness:auth:issuer": "https://issuer.example.com/", "harness:auth:audience": "web, cli" });
      expect(jwt.code, jwt.output).toBe(0);
      expect(httpEnv(jwt.template)).toMatchObject({ AUTH_ISSUER: "https://issuer.example.com/", AUTH_AUDIENCE: "web,cli", HARNESS_URL_AUTH: "NONE" });
      expect(resources(jwt.template, "AWS::Lambda::Url").map(([, r]) => r.Properties.AuthType)).toEqual(["NONE"]);

      const cognito = await synthApp({
        "harness:auth:userPoolArn": "arn:aws:cognito-idp:eu-west-1:111122223333:userpool/eu-west-1_AbCdEf123",
        "harness:auth:audience": "client-a",
        "harness:apiGateway": "true",
      });
      expect(cognito.code, cognito.output).toBe(0);
      expect(resources(cognito.template, "AWS::ApiGateway::Authorizer").map(([, r]) => r.Properties.Type)).toEqual(["COGNITO_USER_POOLS"]);
      expect(httpEnv(cognito.template)).toMatchObject({ AUTH_AUDIENCE: "client-a", HARNESS_URL_AUTH: "API_GATEWAY" });

      const plain = await synthApp({ "harness:auth:issuer": "http://issuer.example.com", "harness:auth:audience": "web" });
      expect(plain.code).not.toBe(0);
      expect(plain.output).toContain("auth.jwt.issuer");
    },
    180_000,
  );

  it("splits a provider SDK off into a chunk that loads on first use", async () => {
    const outdir = mkdtempSync(join(tmpdir(), "harness-split-"));
    try {
      const result = await build(
        lambdaBuildOptions({
          entry: cdkFixture("initialize-handler.mjs"),
          agentsEntry: cdkFixture("model-agents.ts"),
          outdir,
          sourceMap: true,
        }),
      );
      const entry = Object.keys(result.metafile.outputs).find((p) => p.endsWith(`/${LAMBDA_ENTRY_FILE}`))!;
      const coldStart = staticClosure(result.metafile, entry)
        .map((p) => readFileSync(join(process.cwd(), p), "utf8"))
        .join("\n");
      expect(coldStart).not.toContain("anthropic-version");
      expect(codeFiles(outdir).some((f) => readFileSync(f, "utf8").includes("anthropic-version"))).toBe(true);
      // The bundle runs on Node 22 and loads the Anthropic chunk when the agent initializes.
      const run = await execFileAsync(
        join(node22, "node"),
        [
          "--enable-source-maps",
          "--input-type=module",
          "-e",
          `const m = await import(${JSON.stringify(pathToFileURL(join(outdir, LAMBDA_ENTRY_FILE)).href)}); console.log(JSON.stringify(await m.handler()));`,
        ],
        { env: { PATH: process.env.PATH ?? "" } },
      );
      expect(JSON.parse(run.stdout)).toEqual({ provider: "anthropic", id: "claude-sonnet-4-5" });
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Strings only a provider SDK holds (Anthropic's API version header, Google's and OpenAI's hosts). */
const PROVIDER_ONLY = ["anthropic-version", "generativelanguage.googleapis.com", "api.openai.com"];

/** A string only the S3 client holds (its service target). */
const S3_ONLY = ["AmazonS3"];

/** A string only the MCP SDK's streamable HTTP transport holds. */
const MCP_SDK_ONLY = ["Not Acceptable: Client must accept both application/json and text/event-stream"];

/** Strings only the session driver and its JSON Schema validator hold (drive.ts, ajv). */
const DRIVER_ONLY = ["dangling_tool_call_reconciled", "must be equal to one of the allowed values"];

/** An entry file of an asset and every file it imports statically, transitively: what a cold start parses. */
function staticImportClosure(dir: string, entryFile: string): string[] {
  const seen = new Set<string>();
  const pending = [join(dir, entryFile)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    // Minified ESM: `import{a as b}from"./chunks/x.mjs"` or `import"./chunks/x.mjs"` (not `import(`).
    for (const m of readFileSync(file, "utf8").matchAll(/(?:^|[;}\n])import\s*(?:[\w$*{}\s,]+?from\s*)?["'](\.{1,2}\/[^"']+\.mjs)["']/g)) {
      pending.push(join(dirname(file), m[1]!));
    }
  }
  return [...seen];
}

/** The JavaScript files under `dir`, recursively. */
function codeFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".mjs"))
    .map((f) => join(dir, f));
}
