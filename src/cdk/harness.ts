import { existsSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Duration, Names, RemovalPolicy } from "aws-cdk-lib";
import type { Alarm } from "aws-cdk-lib/aws-cloudwatch";
import { Billing, TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import { type IGrantable, PolicyStatement } from "aws-cdk-lib/aws-iam";
import {
  type Function as CdkFunction,
  type FunctionUrl,
  type FunctionUrlCorsOptions,
  EventSourceMapping,
  HttpMethod,
  FunctionUrlAuthType,
  InvokeMode,
} from "aws-cdk-lib/aws-lambda";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { BlockPublicAccess, Bucket, BucketEncryption, type CorsRule, HttpMethods, ObjectOwnership } from "aws-cdk-lib/aws-s3";
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { AuthorizationType } from "aws-cdk-lib/aws-apigateway";
import { Construct, type IConstruct } from "constructs";
import { STREAM_MAX_MS } from "../runtime/defaults.ts";
import { AGENT_NAMES_SEPARATOR, HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole, NAMES_ONLY_ROLES } from "../lambda/env.ts";
import { HarnessApi } from "./harness-api.ts";
import { providerSdkEnv } from "./provider-retries.ts";
import { HarnessFunction, harnessCode } from "./harness-function.ts";
import { entryFileOf } from "./lambda-bundling.ts";
import { HarnessSchedules } from "./harness-schedules.ts";
import { warnPlainSecrets, wireSecrets } from "./harness-secrets.ts";
import {
  agentsModuleOf,
  checkAuth,
  checkEnvironmentSize,
  checkFrontDoor,
  checkWorkerConcurrency,
  effectiveUrlAuthType,
  environmentSizeProblem,
  frontDoorAuth,
  validate,
} from "./harness-checks.ts";
import { authEnvironment, cognitoAuthorizer } from "./harness-auth.ts";
import { secretsWithCallbackToken } from "./harness-callbacks.ts";
import { functionTracing } from "./harness-tracing.ts";
import { createHarnessAlarms } from "./harness-alarms.ts";
import { acknowledgeHarnessFindings } from "./nag-suppressions.ts";
import { HARNESS_TABLE_SCHEMA } from "./table-schema.ts";
import { HarnessGrants } from "./harness-grants.ts";
import { DEFAULT_MEMORY_MB } from "./memory-sizes.ts";

export type * from "./harness-props.ts";
export type { HarnessSecret } from "./harness-secrets.ts";
export type { HarnessCallbacksOptions } from "./harness-callbacks.ts";
export type { HarnessAuthOptions, HarnessCognitoAuthOptions, HarnessJwtAuthOptions } from "./harness-auth.ts";
import type { HarnessProps } from "./harness-props.ts";

// `.ts` when running from the sources (this repository's tests and app), `.js` in the package.
const OWN_EXTENSION = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
/** The handler modules beside this construct: `src/lambda` here, `dist/lambda` in the package. */
const HANDLERS_DIR = fileURLToPath(new URL("../lambda", import.meta.url));

/**
 * The handler module of a role as shipped with this construct. Bundling it from the same
 * installation as the agents module's `resolute-harness` import is what keeps one copy of the
 * harness in each asset.
 */
export function defaultHandlerEntry(role: HarnessFunctionRole): string {
  return join(HANDLERS_DIR, `${role}${OWN_EXTENSION}`);
}

/** The `handler` setting of a role's function: its entry file in its asset, export `handler`. */
export function handlerOf(role: string): string {
  return `${entryFileOf(role).replace(/\.mjs$/, "")}.handler`;
}

/**
 * The serverless shape of the harness (DESIGN §3): a DynamoDB table (the truth), an S3 bucket
 * (spill and attachments), an SQS FIFO work queue (the doorbell) with a FIFO dead-letter queue,
 * and four Lambda functions — `http` (admission and SSE stream behind one function URL),
 * `worker`, `dlq` and `sweeper`. Nothing runs while nothing happens.
 *
 * Every function receives `TABLE_NAME`, `BUCKET_NAME`, `QUEUE_URL` and the Powertools variables;
 * http also `HARNESS_STREAM_MAX_MS` and `HARNESS_URL_AUTH` (and, with `auth`, the `AUTH_*`
 * variables); http and sweeper `HARNESS_AGENT_NAMES` (names in {@link HARNESS_ENV}).
 */
export class Harness extends Construct {
  readonly table: TableV2;
  readonly bucket: Bucket;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly functions: Readonly<Record<HarnessFunctionRole, CdkFunction>>;
  /** The agent names given to the http and sweeper functions (`HARNESS_AGENT_NAMES`). */
  readonly agentNames: readonly string[];
  /** The function URL, unless `apiGateway` is on. */
  readonly functionUrl?: FunctionUrl;
  /** The REST API, when `apiGateway` is on. */
  readonly api?: HarnessApi;
  /** The alarms created (empty when `alarms` is false). */
  readonly alarms: Alarm[] = [];
  /** The base URL clients use: the API's when `apiGateway` is on, else the function URL. */
  readonly url: string;
  /** The function that admits scheduled firings, when `schedules` are given. */
  readonly scheduleFunction?: CdkFunction;
  /** The EventBridge Scheduler schedules, when `schedules` are given. */
  readonly schedules?: HarnessSchedules;

  constructor(scope: Construct, id: string, props: HarnessProps) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const workerTimeout = props.workerTimeout ?? Duration.minutes(15);
    const streamMax = props.streamMaxDuration ?? Duration.millis(STREAM_MAX_MS.serverless);
    const httpTimeout = props.httpTimeout ?? streamMax.plus(Duration.minutes(1));
    const visibility = props.queueVisibilityTimeout ?? workerTimeout.plus(Duration.minutes(1));
    const dlqTimeout = props.dlqHandlerTimeout ?? Duration.minutes(1);
    const maxReceiveCount = props.maxReceiveCount ?? 30;
    const urlAuthType = effectiveUrlAuthType(props);
    validate(props, { workerTimeout, streamMax, httpTimeout, visibility, maxReceiveCount });
    checkAuth(props);
    checkFrontDoor(props);
    checkWorkerConcurrency(props);

    this.table = new TableV2(this, "Table", {
      partitionKey: HARNESS_TABLE_SCHEMA.partitionKey,
      sortKey: HARNESS_TABLE_SCHEMA.sortKey,
      globalSecondaryIndexes: HARNESS_TABLE_SCHEMA.globalSecondaryIndexes,
      timeToLiveAttribute: HARNESS_TABLE_SCHEMA.timeToLiveAttribute,
      billing: Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: props.pointInTimeRecovery ?? true },
      deletionProtection: props.tableDeletionProtection ?? removalPolicy !== RemovalPolicy.DESTROY,
      removalPolicy,
    });

    this.bucket = new Bucket(this, "Bucket", {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: props.accessLogsBucket,
      serverAccessLogsPrefix: props.accessLogsBucket ? "harness/" : undefined,
      // A browser posts a direct upload's form to the bucket, another origin than the harness's
      // (ADR 0034): the origins that may call the harness may post it, and read S3's answer.
      cors: props.corsOrigins && bucketUploadCors(props.corsOrigins),
      removalPolicy,
      lifecycleRules: [
        { id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Direct uploads never completed (ADR 0034): nothing references them.
        { id: "expire-abandoned-direct-uploads", prefix: "uploads/", expiration: Duration.days(1) },
        ...(props.objectExpiration ? [{ id: "expire-objects", expiration: props.objectExpiration }] : []),
      ],
    });

    this.deadLetterQueue = new Queue(this, "DeadLetterQueue", {
      fifo: true,
      contentBasedDeduplication: false,
      retentionPeriod: Duration.days(14),
      visibilityTimeout: dlqTimeout.plus(Duration.minutes(1)),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const highThroughput = props.highThroughputFifo ?? true;
    this.queue = new Queue(this, "Queue", {
      fifo: true,
      // Senders give every doorbell a fresh deduplication id: a re-ring inside the 5-minute
      // window must not be swallowed (DESIGN §3).
      contentBasedDeduplication: false,
      visibilityTimeout: visibility,
      retentionPeriod: Duration.days(4),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount },
      ...(highThroughput
        ? { fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID, deduplicationScope: DeduplicationScope.MESSAGE_GROUP }
        : {}),
    });

    const agentsEntry = resolve(props.agentsEntry);
    if (!existsSync(agentsEntry)) {
      throw new Error(`Harness: agentsEntry ${agentsEntry} does not exist (a module exporting \`agents\`)`);
    }
    const known = agentsModuleOf(props, agentsEntry);
    this.agentNames = known.names;
    // What the functions that know the agents by name only are told about them.
    const namesOnlyEnv: Record<string, string> = {
      [HARNESS_ENV.agentNames]: this.agentNames.join(AGENT_NAMES_SEPARATOR),
      ...(known.subagentLimits ? { [HARNESS_ENV.subagentLimits]: JSON.stringify(known.subagentLimits) } : {}),
    };
    const tracing = functionTracing(props.tracing, (name) => join(HANDLERS_DIR, `${name}${OWN_EXTENSION}`));
    const sourceMaps = props.sourceMaps ?? true;
    const common = {
      tracing,
      logRetention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy,
    };
    // The asset's nominal source is the handlers' directory (never copied or hashed: the hash is the bundle's).
    const code = (entry: string | Record<string, string>, chatPage = false) =>
      harnessCode({ entry, agentsEntry, projectRoot: HANDLERS_DIR, sourceMaps, tracing, chatPage });
    const chatPage = props.chatPage === true ? {} : props.chatPage === false ? undefined : props.chatPage;
    const baseEnv: Record<string, string> = {
      ...props.environment,
      [HARNESS_ENV.tableName]: this.table.tableName,
      [HARNESS_ENV.bucketName]: this.bucket.bucketName,
      [HARNESS_ENV.queueUrl]: this.queue.queueUrl,
      [HARNESS_ENV.serviceName]: props.serviceName ?? "resolute-harness",
      [HARNESS_ENV.logLevel]: props.logLevel ?? "INFO",
      [HARNESS_ENV.metricsNamespace]: props.serviceName ?? "resolute-harness",
      ...tracing?.environment,
      // Every function's store keeps the idle index; the sweeper deletes by it (ADR 0034).
      ...(props.conversationRetention ? { [HARNESS_ENV.conversationRetentionMs]: String(props.conversationRetention.toMilliseconds()) } : {}),
    };
    const roleEnv = (role: HarnessFunctionRole): Record<string, string> =>
      NAMES_ONLY_ROLES.includes(role)
        ? { ...baseEnv, ...namesOnlyEnv }
        : { ...providerSdkEnv(props.bedrock), ...baseEnv };
    const entry = (role: HarnessFunctionRole): string => {
      const given = props.handlerEntries?.[role];
      return given ? (isAbsolute(given) ? given : resolve(given)) : defaultHandlerEntry(role);
    };

    const http = new HarnessFunction(this, "Http", {
      ...common,
      code: code(entry("http"), chatPage !== undefined),
      handler: handlerOf("http"),
      timeout: httpTimeout,
      memorySize: props.httpMemorySize ?? DEFAULT_MEMORY_MB.http,
      environment: {
        ...roleEnv("http"),
        [HARNESS_ENV.streamMaxMs]: String(streamMax.toMilliseconds()),
        [HARNESS_ENV.urlAuth]: props.apiGateway ? "API_GATEWAY" : urlAuthType,
        ...(props.corsOrigins ? { [HARNESS_ENV.corsOrigins]: props.corsOrigins.join(",") } : {}),
        // Users' JWTs are verified where requests arrive, and only there (ADR 0045).
        ...(props.auth ? authEnvironment(props.auth) : {}),
        ...(chatPage ? { [HARNESS_ENV.chatPage]: JSON.stringify(chatPage) } : {}),
      },
    });
    // The worker and the dlq function bundle the same code (the agents module): one asset, two entries.
    const agentsCode = code({ worker: entry("worker"), dlq: entry("dlq") });
    const worker = new HarnessFunction(this, "Worker", {
      ...common,
      code: agentsCode,
      handler: handlerOf("worker"),
      timeout: workerTimeout,
      memorySize: props.workerMemorySize ?? DEFAULT_MEMORY_MB.worker,
      reservedConcurrentExecutions: props.workerReservedConcurrency,
      environment: {
        ...roleEnv("worker"),
        ...(props.deltaRetention ? { [HARNESS_ENV.deltaRetentionMs]: String(props.deltaRetention.toMilliseconds()) } : {}),
      },
    });
    const dlq = new HarnessFunction(this, "Dlq", {
      ...common,
      code: agentsCode,
      handler: handlerOf("dlq"),
      timeout: dlqTimeout,
      memorySize: DEFAULT_MEMORY_MB.dlq,
      environment: { ...roleEnv("dlq"), [HARNESS_ENV.deadLetterQueueUrl]: this.deadLetterQueue.queueUrl },
      // The next tick is the retry (as the sweeper's).
      retryAttempts: 0,
    });
    const sweeper = new HarnessFunction(this, "Sweeper", {
      ...common,
      code: code(entry("sweeper")),
      handler: handlerOf("sweeper"),
      timeout: props.sweeperTimeout ?? Duration.minutes(1),
      memorySize: DEFAULT_MEMORY_MB.sweeper,
      environment: roleEnv("sweeper"),
      // The next tick is the retry; stacking retries would only overlap sweeps.
      retryAttempts: 0,
    });
    this.functions = { http: http.function, worker: worker.function, dlq: dlq.function, sweeper: sweeper.function };
    // Secrets travel as references, each granted only to the roles of the functions that get it.
    const secrets = secretsWithCallbackToken({ ...props, urlAuthType });
    if (secrets) wireSecrets(this, secrets, { http, worker, dlq, sweeper }, props.environment ?? {});
    warnPlainSecrets(this, props.environment ?? {});

    // Least privilege: each role gets the data-plane actions its code calls, on these resources
    // only (the construct's tests pin each role's exact action list).
    const grants = new HarnessGrants({ table: this.table, bucket: this.bucket, queue: this.queue });
    for (const fn of [http, worker, dlq, sweeper]) grants.tableData(fn.role);
    // Every function holds a DynamoDB store, and the store may spill any payload to S3 or read
    // one back (a settlement's outcome, a parent's task result), so all four get the objects.
    for (const fn of [http, worker, dlq, sweeper]) grants.objects(fn.role);
    // Completing a direct upload (POST /attachments/uploads/:id/complete) is an HTTP route.
    grants.stagedUploadDeletion(http.role);
    grants.deletion(http.role);
    grants.consoleListing(http.role);
    // Conversation retention deletes from the sweep.
    if (props.conversationRetention) grants.deletion(sweeper.role);
    // Every function rings doorbells (admission, the next head after a settlement, re-rings).
    for (const fn of [http, worker, dlq, sweeper]) grants.ring(fn.role);
    // The event source's pollers receive, delete and read the queue's attributes with the
    // worker's role; the worker itself changes its message's visibility (lease, backoff). The
    // mapping keeps the id `SqsEventSource` gave it (no replacement on upgrade) but not that
    // class's grant, which adds GetQueueUrl: the worker resolves its queue's URL from QUEUE_URL.
    new EventSourceMapping(worker.function, `SqsEventSource:${Names.nodeUniqueId(this.queue.node)}`, {
      target: worker.function,
      eventSourceArn: this.queue.queueArn,
      batchSize: 1,
      reportBatchItemFailures: true,
      maxConcurrency: props.workerMaxConcurrency,
    });
    worker.role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessQueueConsume",
        actions: ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"],
        resources: [this.queue.queueArn],
      }),
    );
    // No event source on the DLQ: its pollers would bill ~650,000 empty receives a month. The
    // dlq function drains it on the sweep schedule instead (src/sqs/dead-letter-drain.ts): a
    // short receive (its visibility given in the receive) and a delete per handled letter.
    dlq.role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessDeadLetterDrain",
        actions: ["sqs:ReceiveMessage", "sqs:DeleteMessage"],
        resources: [this.deadLetterQueue.queueArn],
      }),
    );
    const bedrockResources = props.bedrock ? grants.bedrock(worker.role, props.bedrock === true ? {} : props.bedrock) : undefined;

    const nagRoles: IConstruct[] = [];
    const nagFunctions: IConstruct[] = [];
    new Rule(this, "SweepSchedule", {
      description: "Runs the harness sweeper and drains the dead-letter queue",
      schedule: Schedule.rate(props.sweeperRate ?? Duration.minutes(1)),
      // The next tick is the retry of either.
      targets: [new LambdaFunction(sweeper.function, { retryAttempts: 0 }), new LambdaFunction(dlq.function, { retryAttempts: 0 })],
    });

    if (props.schedules && props.schedules.length > 0) {
      const schedule = new HarnessFunction(this, "Schedule", {
        ...common,
        code: code(join(HANDLERS_DIR, `schedule${OWN_EXTENSION}`)),
        handler: handlerOf("schedule"),
        timeout: Duration.seconds(30),
        memorySize: DEFAULT_MEMORY_MB.schedule,
        // Names only, as the http function: it admits, never runs an agent.
        environment: { ...baseEnv, ...namesOnlyEnv },
      });
      grants.tableData(schedule.role);
      grants.objects(schedule.role);
      grants.ring(schedule.role);
      this.scheduleFunction = schedule.function;
      this.schedules = new HarnessSchedules(this, "Schedules", {
        schedules: props.schedules,
        target: schedule.function,
        agentNames: this.agentNames,
      });
      nagRoles.push(schedule.role);
      nagFunctions.push(schedule.function);
    }

    if (props.apiGateway) {
      const userPoolAuthorizer = cognitoAuthorizer(this, props.auth);
      this.api = new HarnessApi(this, "Api", {
        handler: http.function,
        integrationTimeout: httpTimeout,
        defaultAuthorization: urlAuthType === FunctionUrlAuthType.AWS_IAM ? "IAM" : "NONE",
        logRetention: common.logRetention,
        removalPolicy,
        corsOrigins: props.corsOrigins,
        corsAllowedHeaders: CORS_ALLOWED_HEADERS,
        openCallbacks: props.callbacks !== undefined,
        ...(props.apiGateway === true ? {} : props.apiGateway),
        ...(userPoolAuthorizer ? { authorizer: userPoolAuthorizer, authorizationScopes: props.auth?.cognito?.scopes } : {}),
      });
      this.url = this.api.restApi.url;
    } else {
      this.functionUrl = http.function.addFunctionUrl({
        authType: urlAuthType,
        invokeMode: InvokeMode.RESPONSE_STREAM,
        cors: props.corsOrigins && functionUrlCors(props.corsOrigins),
      });
      this.url = this.functionUrl.url;
    }

    if (props.alarms ?? props.alarmTopic !== undefined) {
      this.alarms.push(...createHarnessAlarms(this, { worker: this.functions.worker, deadLetterQueue: this.deadLetterQueue, props }));
    }

    // Lambda refuses an environment over 4 KB at deployment: refuse it here, and again at synth
    // for variables added to a function after this constructor.
    const sized: [string, CdkFunction][] = [...Object.entries(this.functions), ...(this.scheduleFunction ? [["schedule", this.scheduleFunction] as [string, CdkFunction]] : [])];
    for (const [role, fn] of sized) checkEnvironmentSize(role, fn);
    this.node.addValidation({
      validate: () => sized.map(([role, fn]) => environmentSizeProblem(role, fn)).filter((problem): problem is string => problem !== undefined),
    });

    const apiOptions = typeof props.apiGateway === "object" ? props.apiGateway : {};
    const auth = frontDoorAuth(props);
    acknowledgeHarnessFindings({
      bucket: this.bucket,
      bucketAccessLogs: props.accessLogsBucket !== undefined,
      functions: [...Object.values(this.functions), ...nagFunctions],
      roles: [...[http, worker, dlq, sweeper].map((fn) => fn.role), ...nagRoles],
      xray: props.tracing?.xray === true,
      bedrockDefaultGrant:
        bedrockResources && (typeof props.bedrock !== "object" || props.bedrock.resources === undefined)
          ? { role: worker.role, resources: bedrockResources }
          : undefined,
      api: this.api && {
        restApi: this.api.restApi,
        stage: this.api.restApi.deploymentStage,
        methods: this.api.methods,
        preflightMethods: this.api.preflightMethods,
        callbackMethod: this.api.callbackMethod,
        webAcl: apiOptions.webAclArn !== undefined,
        accessLogs: apiOptions.accessLogs === true,
        appAuthenticates: auth.gate !== "none" ? undefined : auth.jwt ? "jwt" : auth.bearerToken ? "bearerToken" : undefined,
        cognito: (this.api.authorizer ?? apiOptions.authorizer)?.authorizationType === AuthorizationType.COGNITO,
      },
    });
  }

  /**
   * Let `grantee` call the harness over HTTP with `AWS_IAM` auth: the function URL's
   * `lambda:InvokeFunctionUrl` and `lambda:InvokeFunction` (both needed for URLs created since
   * October 2025; the second only through the URL), or the API's `execute-api:Invoke`.
   */
  grantInvoke(grantee: IGrantable): void {
    if (this.functionUrl) {
      this.functions.http.grantInvokeUrl(grantee);
    } else if (this.api) {
      this.api.grantInvoke(grantee);
    }
  }

}

/**
 * Request headers a browser client may send: the JSON body's type, a bearer token, SSE's resume
 * point, and SigV4's headers (a browser signing with credentials it was given).
 */
export const CORS_ALLOWED_HEADERS = [
  "content-type",
  "authorization",
  "last-event-id",
  "x-amz-date",
  "x-amz-security-token",
  "x-amz-content-sha256",
] as const;

/**
 * The bucket's CORS rule for direct uploads: a presigned POST is a form post (a CORS-safelisted
 * request, no preflight, no custom headers: the policy's fields travel in the form), so it needs
 * only POST from the allowed origins for the browser to let the page read the answer.
 */
function bucketUploadCors(origins: readonly string[]): CorsRule[] {
  return [{ id: "direct-uploads", allowedMethods: [HttpMethods.POST], allowedOrigins: [...origins], maxAge: Duration.hours(1).toSeconds() }];
}

function functionUrlCors(origins: readonly string[]): FunctionUrlCorsOptions {
  return {
    allowedOrigins: [...origins],
    allowedMethods: [HttpMethod.GET, HttpMethod.POST],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    maxAge: Duration.hours(1),
  };
}
