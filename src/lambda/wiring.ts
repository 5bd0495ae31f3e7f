/**
 * What every handler shares, built once per Lambda container: settings from the environment,
 * the DynamoDB + S3 store, the SQS work queue, the runtime over them (not started: on Lambda the
 * event sources drive it), a Powertools logger and EMF metrics fed by a runtime observer.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { GetQueueUrlCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { MiddlewareHandler } from "hono";
import { HARNESS_ENV } from "./env.ts";
import { namesOnlyAgents } from "../agent/names-only-agents.ts";
import type { DoorbellOutcome, Doorbell } from "../ports/queue.ts";
import type { DirectUploads } from "../ports/direct-uploads.ts";
import { consumeSqsBatch, failureBackoffMs } from "../sqs/batch-consumer.ts";
import { changeMessageVisibility, SqsWorkQueue } from "../sqs/sqs-queue.ts";
import { createRuntime, type Runtime } from "../runtime/runtime.ts";
// The store module itself, not the package entry (index.ts), whose S3 helpers would pull the S3 SDK
// into the cold start (the store loads it on first use: s3-client.ts).
import { createDynamoStore } from "../dynamodb/dynamo-store.ts";
import { bearerAuth } from "../http/bearer-auth.ts";
import { authFromEnv, type EnvAuth } from "../auth/auth-from-env.ts";
import { checkAgentsModule, type HarnessAgentsModule } from "./agents-module.ts";
import { loadSecrets, plainSecretLikeNames } from "./secrets.ts";
import { readSettings, subagentLimitsFromEnv, type LambdaSettings } from "./settings.ts";
import { METRIC, telemetryObserver } from "./telemetry.ts";
import { aroundInvocation, instrumentClient, type LambdaTracingHooks, tracingHooks } from "./tracing-hooks.ts";
import { createDynamoClient } from "../dynamodb/clients.ts";

/** What a function's handler works with: its settings, runtime, queue and telemetry, built once per container. */
export interface Wiring {
  settings: LambdaSettings;
  runtime: Runtime;
  queue: SqsWorkQueue;
  sqs: SQSClient;
  logger: Logger;
  metrics: Metrics;
  /** The queue URL of an event source ARN (the work queue's without a request). */
  queueUrlOf(eventSourceArn: string): Promise<string>;
  /**
   * Who may call the HTTP app (ADR 0043): the operator's `HARNESS_BEARER_TOKEN` and/or users' JWTs
   * (`AUTH_ISSUER`, `AUTH_AUDIENCE`, …); undefined when the function URL's IAM (or API Gateway)
   * authenticates callers instead.
   */
  httpAuth?: EnvAuth;
  /** Middleware of `/callbacks/*` when it has its own bearer token (`HARNESS_CALLBACK_TOKEN`); else the app's. */
  callbackMiddleware?: MiddlewareHandler[];
  /** The tracing modules' hooks (none unless the construct's `tracing` option bundled one). */
  tracing: readonly LambdaTracingHooks[];
}

/**
 * The agents a handler's runtime knows: the user's agents module (`#harness-agents`, with its
 * observers and interceptors: functions that run agents), or only the agents' names (functions
 * that admit or sweep, e.g. `agentNamesFromEnv()`): these get {@link namesOnlyAgents}, so the
 * agents module, its model providers and their SDKs stay out of the bundle.
 */
export type HandlerAgents = HarnessAgentsModule | readonly string[];

let built: Promise<Wiring> | undefined;

/**
 * The container's wiring, built on first use from `process.env`, after the function's secrets
 * are read into it (`HARNESS_SECRETS`, once per container). A failed build is retried by the
 * next call.
 */
export function wiring(agents: HandlerAgents): Promise<Wiring> {
  built ??= loadSecrets()
    .then(async () => build(agents, await tracingHooks()))
    .catch((err: unknown) => {
      built = undefined;
      throw err;
    });
  return built;
}

function build(given: HandlerAgents, tracing: readonly LambdaTracingHooks[]): Wiring {
  // Names only: the module's subagent limits come from the environment (a parent this function
  // settles must treat its children as the module says: ADR 0023).
  const mod: HarnessAgentsModule = isNameList(given)
    ? { agents: namesOnlyAgents(given), subagentLimits: subagentLimitsFromEnv() }
    : checkAgentsModule(given);
  const settings = readSettings();
  const httpAuth = authFromEnv(process.env);
  const logger = new Logger({ serviceName: settings.serviceName });
  const plain = plainSecretLikeNames();
  if (plain.length > 0) {
    // Names only: the values are what must not be in a log.
    logger.warn("variables that look like secrets came as plain environment (readable in the function's configuration): pass them with the construct's `secrets` prop", {
      variables: plain,
    });
  }
  const metrics = new Metrics({ namespace: settings.metricsNamespace, serviceName: settings.serviceName });
  const sqs = instrumentClient(tracing, sqsClient());
  const queue = new SqsWorkQueue({ client: sqs, queueUrl: settings.queueUrl });
  const store = createDynamoStore({
    tableName: settings.tableName,
    bucketName: settings.bucketName,
    deltaRetentionMs: settings.deltaRetentionMs,
    idleSessions: settings.conversationRetentionMs !== undefined,
    // Created here only to be instrumented; otherwise the store makes its own.
    ...(tracing.length > 0 ? { dynamo: instrumentClient(tracing, createDynamoClient()) } : {}),
  });
  const runtime = createRuntime({
    agents: mod.agents,
    store,
    queue,
    leaseMs: settings.leaseMs,
    flushPolicy: settings.flushPolicy,
    observers: [telemetryObserver(logger, metrics), ...tracing.flatMap((t) => t.observers ?? []), ...(mod.observers ?? [])],
    interceptors: [...tracing.flatMap((t) => t.interceptors ?? []), ...(mod.interceptors ?? [])],
    subagents: mod.subagents,
    subagentLimits: mod.subagentLimits,
    ...(httpAuth ? { authorize: httpAuth.authorize } : {}),
    directUploads: lazyDirectUploads(settings.bucketName),
    ...(settings.conversationRetentionMs !== undefined ? { conversationRetentionMs: settings.conversationRetentionMs } : {}),
    onObserverError: (err) => logger.error("observer failed", { error: errorFields(err) }),
  });
  return {
    settings,
    runtime,
    queue,
    sqs,
    logger,
    metrics,
    queueUrlOf: queueUrlResolver(sqs, settings.queueUrl),
    ...(checkedHttpAuth(settings, httpAuth) ? { httpAuth } : {}),
    ...(settings.callbackTokens.length > 0 ? { callbackMiddleware: [bearerAuth({ token: settings.callbackTokens })] } : {}),
    tracing,
  };
}

/**
 * Direct uploads into the harness bucket (presigned POST, ADR 0034), loaded on first use: the
 * S3 SDK stays out of a cold start that never sees an upload.
 */
function lazyDirectUploads(bucket: string): DirectUploads {
  let made: Promise<DirectUploads> | undefined;
  const uploads = () => {
    made ??= Promise.all([import("../dynamodb/direct-uploads.ts"), import("../dynamodb/s3-client.ts")]).then(([m, s3]) =>
      m.s3DirectUploads({ s3: s3.createS3Client(), bucket }),
    );
    made.catch(() => (made = undefined));
    return made;
  };
  return {
    create: async (request) => (await uploads()).create(request),
    complete: async (uploadId, check) => (await uploads()).complete(uploadId, check),
  };
}

/**
 * SQS client. The endpoint is passed explicitly when `AWS_ENDPOINT_URL_SQS` is set (local
 * emulators): otherwise the SDK sends to the queue URL's host, which a local emulator's URLs do
 * not resolve to. In Lambda the variable is unset and this is a plain client.
 */
export function sqsClient(): SQSClient {
  // Attempts pinned: `AWS_MAX_ATTEMPTS` (set for the provider SDKs, ADR 0019) must not reach it.
  return new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS || undefined, maxAttempts: SQS_MAX_ATTEMPTS });
}

/** The SDK's default attempts, kept for the harness's SQS client whatever `AWS_MAX_ATTEMPTS` says. */
export const SQS_MAX_ATTEMPTS = 3;

function queueUrlResolver(sqs: SQSClient, workQueueUrl: string): (arn: string) => Promise<string> {
  const cache = new Map<string, Promise<string>>();
  return (arn) => {
    let url = cache.get(arn);
    if (!url) {
      // arn:<partition>:sqs:<region>:<account>:<name>
      const [, , , , account, name] = arn.split(":");
      if (!name) return Promise.reject(new Error(`not an SQS queue ARN: ${arn}`));
      url = workQueueUrl.endsWith(`/${name}`)
        ? Promise.resolve(workQueueUrl)
        : sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account })).then((r) => r.QueueUrl!);
      url.catch(() => cache.delete(arn));
      cache.set(arn, url);
    }
    return url;
  };
}

/** Whether the app authenticates callers itself; refuses a function URL open to anyone unless asked to. */
function checkedHttpAuth(settings: LambdaSettings, auth: EnvAuth | undefined): boolean {
  if (auth !== undefined) return true;
  if (settings.urlAuth === "NONE" && !settings.allowUnauthenticated) {
    throw new Error(
      "HARNESS_URL_AUTH is NONE but neither HARNESS_BEARER_TOKEN nor AUTH_ISSUER is set: refusing to serve unauthenticated " +
        "(set HARNESS_ALLOW_UNAUTHENTICATED=true to do so on purpose)",
    );
  }
  return false;
}

/**
 * Runs one invocation with the Lambda context in the logs, inside the tracing hooks (which flush
 * their spans before it returns), and the metrics flushed after it.
 */
export async function invocation<T>(h: Pick<Wiring, "logger" | "metrics" | "tracing">, context: Context, work: () => Promise<T>): Promise<T> {
  h.logger.addContext(context);
  try {
    return await aroundInvocation(h.tracing, work);
  } finally {
    h.logger.resetKeys();
    if (h.metrics.hasStoredMetrics()) h.metrics.publishStoredMetrics();
  }
}

/**
 * A handler for an SQS event source (worker, dead-letter queue) that never throws: every failure,
 * the container's own set-up included, is a batch item failure with a short backoff.
 */
export function sqsHandler(
  agents: HandlerAgents,
  handle: (h: Wiring, doorbell: Doorbell, context: Context, record: SQSRecord) => Promise<DoorbellOutcome>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  return async (event, context) => {
    let h: Wiring;
    try {
      h = await wiring(agents);
    } catch (err) {
      console.error(JSON.stringify({ level: "ERROR", message: "harness set-up failed", error: errorFields(err) }));
      return setupFailed(event);
    }
    return invocation(h, context, () =>
      consumeSqsBatch(event, {
        client: h.sqs,
        queueUrlOf: h.queueUrlOf,
        leaseMs: h.settings.leaseMs,
        handle: (doorbell, record) => {
          h.logger.appendKeys({ messageId: record.messageId, submissionId: doorbell.submissionId, sessionKey: doorbell.group });
          return handle(h, doorbell, context, record);
        },
        onError: (err, record, phase) => {
          h.logger.error(`doorbell ${phase} failed`, { messageId: record.messageId, error: errorFields(err) });
          if (phase === "decode") h.metrics.addMetric(METRIC.malformedDoorbells, MetricUnit.Count, 1);
        },
      }),
    );
  };
}

/**
 * Without a harness nothing can be handled: fail every record. A message of the work queue (the
 * only URL known without settings) is backed off by its receive count; others keep the queue's
 * visibility timeout.
 */
async function setupFailed(event: SQSEvent): Promise<SQSBatchResponse> {
  const sqs = sqsClient();
  const queueUrl = process.env[HARNESS_ENV.queueUrl] ?? "";
  const queueName = queueUrl.split("/").pop() ?? "";
  try {
    for (const record of event.Records ?? []) {
      if (!queueName || !record.eventSourceARN?.endsWith(`:${queueName}`)) continue;
      const delay = failureBackoffMs(Number(record.attributes?.ApproximateReceiveCount ?? 1));
      await changeMessageVisibility(sqs, queueUrl, record.receiptHandle, delay).catch(() => {});
    }
  } finally {
    sqs.destroy();
  }
  return { batchItemFailures: (event.Records ?? []).map((r) => ({ itemIdentifier: r.messageId })) };
}

function isNameList(agents: HandlerAgents): agents is readonly string[] {
  return Array.isArray(agents);
}

export function errorFields(err: unknown): { name: string; message: string; stack?: string } {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: "Error", message: String(err) };
}
