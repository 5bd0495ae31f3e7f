/**
 * The serverless shape on one machine (`npm run dev:aws`, and the Lambda tests): creates the
 * table, bucket and queues (FIFO work queue + FIFO dead-letter queue with a redrive policy) on
 * the local emulators, serves the `http` handler module as a streaming function URL, and feeds
 * the `worker`, `dlq` and `sweeper` handler modules the way Lambda's SQS event source (the
 * worker's) and an EventBridge schedule (the sweeper and the dlq function's drain) would. Every function runs in child processes with only its own
 * environment, so the code under test is exactly what a deployment bundles. As the `Harness`
 * construct does, the http and sweeper functions get the agent names (`HARNESS_AGENT_NAMES`)
 * instead of the agents module; so does the schedule function, fired on demand as EventBridge
 * Scheduler would (`fireSchedule`).
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { ScheduledEvent, SQSEvent } from "aws-lambda";
import { checkAgentNames, discoverAgentsModule, type DiscoveredAgentsModule } from "../../src/cdk/agent-names.ts";
import { resolveLimits } from "../../src/engine/subagents.ts";
import { type SubagentLimits } from "../../src/agent/subagent-policy.ts";
import { AGENT_NAMES_SEPARATOR, HARNESS_ENV, type HarnessFunctionRole, NAMES_ONLY_ROLES } from "../../src/lambda/env.ts";
import { SCHEDULED_TIME_ATTRIBUTE } from "../../src/runtime/scheduled-dispatch.ts";
import { createDynamoClient, createHarnessBucket, createHarnessTable, createS3Client } from "../../src/dynamodb/index.ts";
import { LocalFunction, LocalFunctionUrl, type LogSink } from "./function-host.ts";
import { SqsEventSource } from "./sqs-event-source.ts";
import { startSqsLimitsProxy, type SqsLimitsProxy } from "./sqs-limits-proxy.ts";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The construct's schedule function timeout. */
const SCHEDULE_TIMEOUT_MS = 30_000;

/** The emulator environment variables the functions inherit (endpoints, region, credentials). */
const PASSED_THROUGH = [
  "AWS_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_ENDPOINT_URL_DYNAMODB",
  "AWS_ENDPOINT_URL_SQS",
  "AWS_ENDPOINT_URL_S3",
  "PATH",
  "HOME",
  "TZ",
];

export interface LocalCloudOptions {
  /** Path of the module exporting `agents` (bound to `#harness-agents`). */
  agentsModule: string;
  /**
   * The agent names the http and sweeper functions get (`HARNESS_AGENT_NAMES`); default:
   * discovered by importing `agentsModule` in a child process, as the construct does.
   */
  agentNames?: readonly string[];
  /**
   * The module's `subagentLimits` for the names-only functions (`HARNESS_SUBAGENT_LIMITS`), as the
   * construct's prop of that name: discovered with the names, or given here beside `agentNames`.
   */
  subagentLimits?: SubagentLimits;
  /** Handler modules by role; default `src/lambda/<role>.ts` of this repository. */
  handlers?: Partial<Record<HarnessFunctionRole, string>>;
  /** Prefix of the table, bucket and queue names; default `harness-local-<random>`. */
  name?: string;
  /** Function URL port; default 0 (any free port). */
  port?: number;
  host?: string;
  /** Worker containers polling the work queue (Lambda's concurrency). Default 2. */
  workers?: number;
  /** Default 15 min (Lambda's maximum, the construct's default). */
  workerTimeoutMs?: number;
  /** Default: the stream limit + 1 min. */
  httpTimeoutMs?: number;
  /** Default 5 min. */
  streamMaxMs?: number;
  /**
   * The function URL's streamed-response maximum (`function-url-limits.ts`); default Lambda's
   * 200 MB. Lowered by a test to reach the limit cheaply.
   */
  streamedResponseMaxBytes?: number;
  /** Default 1 min. */
  dlqTimeoutMs?: number;
  /** Default 1 min. */
  sweeperTimeoutMs?: number;
  /** Work queue visibility timeout; default the worker timeout + 1 min (as the construct). */
  queueVisibilityTimeoutMs?: number;
  /** Receives before SQS dead-letters a doorbell; default 30 (as the construct). */
  maxReceiveCount?: number;
  /**
   * How often the sweep schedule fires (the sweeper and the dlq drain); default 60 s; `false`:
   * only when `sweep()` / `drainDeadLetters()` is called.
   */
  sweeperRateMs?: number | false;
  /** Long-poll wait of the event sources, seconds. Default 1. */
  pollWaitSeconds?: number;
  /** Extra environment for every function (e.g. HARNESS_LEASE_MS, provider keys). */
  env?: Record<string, string>;
  /** Extra environment per role (wins over `env`). */
  functionEnv?: Partial<Record<HarnessFunctionRole, Record<string, string>>>;
  /**
   * Memory size per role as a hard limit on each container (`LocalFunctionOptions.memoryMb`:
   * V8's heap as Lambda sizes it, killed above its resident size). Default: unlimited.
   */
  memoryMb?: Partial<Record<HarnessFunctionRole, number>>;
  /** Function output; default: stderr with a `[name]` prefix. */
  log?: LogSink;
  /** Event-source and schedule failures; default: logged through `log`. */
  onError?: (err: unknown, source: string) => void;
  /**
   * Called with each event the work queue's event source received, just before it invokes `fn`
   * with it: a test may kill `fn`'s container here, as an init failure or a crash of the runtime
   * before the handler ends a real invocation (the message then stays in flight for the queue's
   * visibility timeout, since no handler ever saw it).
   */
  beforeInvoke?: (event: SQSEvent, fn: LocalFunction) => void;
}

/** One event an event source handed a function. */
export interface Delivery {
  /** The worker's queue (the only one with an event source; the dlq function drains its queue on the schedule). */
  queue: "work";
  function: string;
  messageId: string;
  receiveCount: number;
  body: string;
  /** Epoch ms. */
  at: number;
}

/** A running local cloud. */
export interface LocalCloud {
  /** The function URL (base URL of the HTTP API). */
  readonly url: string;
  readonly tableName: string;
  readonly bucketName: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn: string;
  readonly http: LocalFunctionUrl;
  readonly workers: LocalFunction[];
  readonly dlq: LocalFunction;
  readonly sweeper: LocalFunction;
  /** Every message the event sources delivered, in order (for tests and debugging). */
  readonly deliveries: Delivery[];
  /** The environment a function of `role` gets. */
  functionEnv(role: HarnessFunctionRole): Record<string, string>;
  /** Invokes the sweeper now with a scheduled event; resolves with its report. */
  sweep(): Promise<unknown>;
  /** Invokes the dlq function now with a scheduled event (its drain); resolves with its report. */
  drainDeadLetters(): Promise<unknown>;
  /**
   * Starts another, separately configured deployment of one function that no event source feeds
   * (e.g. an http function whose queue is unreachable); closed with the cloud.
   */
  extraFunction(role: "http", env?: Record<string, string>): Promise<LocalFunctionUrl>;
  extraFunction(role: Exclude<HarnessFunctionRole, "http">, env?: Record<string, string>): Promise<LocalFunction>;
  /**
   * Starts one more deployment (container) of the schedule function (`src/lambda/schedule.ts`,
   * names only, as the construct's `schedules` deploy it); closed with the cloud.
   */
  scheduleFunction(): Promise<LocalFunction>;
  /**
   * Fires a schedule as EventBridge Scheduler does: the target's `input` (the construct's, see
   * `scheduledFiringInput`) with the scheduled-time attribute replaced by `scheduledTime`, handed
   * to the schedule function (`fn`, default one shared deployment). Resolves with its answer;
   * rejects when the invocation fails (Scheduler would retry it).
   */
  fireSchedule(input: string, scheduledTime: string, fn?: LocalFunction): Promise<unknown>;
  /** Stops the schedule, the event sources and every function. */
  stop(): Promise<void>;
}

/** Creates the resources on the emulators named by `AWS_ENDPOINT_URL_*` and starts everything. */
export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  const known: DiscoveredAgentsModule = options.agentNames ? { names: checkAgentNames(options.agentNames) } : discoverAgentsModule(options.agentsModule);
  if (options.subagentLimits !== undefined) known.subagentLimits = resolveLimits(options.subagentLimits);
  const agentNames = known.names;
  // As the construct does: the functions that know the agents by name only get the limits too.
  const namesOnlyEnv: Record<string, string> = {
    [HARNESS_ENV.agentNames]: agentNames.join(AGENT_NAMES_SEPARATOR),
    ...(known.subagentLimits ? { [HARNESS_ENV.subagentLimits]: JSON.stringify(known.subagentLimits) } : {}),
  };
  const name = options.name ?? `harness-local-${randomUUID().slice(0, 8)}`;
  const workerTimeoutMs = options.workerTimeoutMs ?? 15 * 60_000;
  const streamMaxMs = options.streamMaxMs ?? 5 * 60_000;
  const timeouts: Record<HarnessFunctionRole, number> = {
    http: options.httpTimeoutMs ?? streamMaxMs + 60_000,
    worker: workerTimeoutMs,
    dlq: options.dlqTimeoutMs ?? 60_000,
    sweeper: options.sweeperTimeoutMs ?? 60_000,
  };
  const visibilityMs = options.queueVisibilityTimeoutMs ?? workerTimeoutMs + 60_000;
  if (visibilityMs < workerTimeoutMs) {
    // Lambda refuses such an event source: a message would come back while its worker still runs.
    throw new Error("startLocalCloud: queueVisibilityTimeoutMs must be at least workerTimeoutMs");
  }
  const log: LogSink = options.log ?? ((line, source) => process.stderr.write(`[${source}] ${line}\n`));
  const onError = options.onError ?? ((err, source) => log(`event source error: ${String(err)}`, source));

  const tableName = `${name}-table`;
  const bucketName = `${name}-bucket`.toLowerCase();
  const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS || undefined });
  const dynamo = createDynamoClient();
  const s3 = createS3Client();
  const queues = await (async () => {
    try {
      const [, , created] = await Promise.all([
        createHarnessTable(dynamo, tableName),
        createHarnessBucket(s3, bucketName),
        createQueues(sqs, name, {
          visibilityTimeoutMs: visibilityMs,
          dlqVisibilityTimeoutMs: timeouts.dlq + 60_000,
          maxReceiveCount: options.maxReceiveCount ?? 30,
        }),
      ]);
      return created;
    } finally {
      dynamo.destroy();
      s3.destroy();
    }
  })();

  const base: Record<string, string> = {};
  for (const key of PASSED_THROUGH) if (process.env[key] !== undefined) base[key] = process.env[key]!;
  // The functions reach SQS through a proxy holding the limits fauxqs does not (sqs-limits-proxy.ts).
  const sqsLimits: SqsLimitsProxy | undefined = base.AWS_ENDPOINT_URL_SQS ? await startSqsLimitsProxy(base.AWS_ENDPOINT_URL_SQS) : undefined;
  if (sqsLimits) base.AWS_ENDPOINT_URL_SQS = sqsLimits.url;
  Object.assign(base, {
    [HARNESS_ENV.tableName]: tableName,
    [HARNESS_ENV.bucketName]: bucketName,
    [HARNESS_ENV.queueUrl]: queues.queueUrl,
    [HARNESS_ENV.serviceName]: "resolute-harness",
    [HARNESS_ENV.logLevel]: "WARN",
    [HARNESS_ENV.metricsNamespace]: "resolute-harness",
    // A local URL has no IAM in front of it: serve unauthenticated unless a token is given.
    [HARNESS_ENV.urlAuth]: "NONE",
    HARNESS_ALLOW_UNAUTHENTICATED: "true",
    POWERTOOLS_METRICS_DISABLED: "true",
  });
  const functionEnv = (role: HarnessFunctionRole): Record<string, string> => ({
    ...base,
    ...(role === "http" ? { [HARNESS_ENV.streamMaxMs]: String(streamMaxMs) } : {}),
    ...(role === "dlq" ? { [HARNESS_ENV.deadLetterQueueUrl]: queues.deadLetterQueueUrl } : {}),
    ...(NAMES_ONLY_ROLES.includes(role) ? namesOnlyEnv : {}),
    ...options.env,
    ...options.functionEnv?.[role],
  });
  const handlerModule = (role: HarnessFunctionRole) => options.handlers?.[role] ?? `${REPO_ROOT}src/lambda/${role}.ts`;
  const common = (role: HarnessFunctionRole, fnName: string, env: Record<string, string>) => ({
    name: fnName,
    handlerModule: handlerModule(role),
    agentsModule: options.agentsModule,
    timeoutMs: timeouts[role],
    env,
    memoryMb: options.memoryMb?.[role],
    log,
  });

  const extras: Array<{ close(): Promise<void> }> = [];
  const http = new LocalFunctionUrl({
    ...common("http", "http", functionEnv("http")),
    port: options.port,
    host: options.host,
    streamedResponseMaxBytes: options.streamedResponseMaxBytes,
  });
  const workers = Array.from(
    { length: options.workers ?? 2 },
    (_, i) => new LocalFunction(common("worker", `worker-${i + 1}`, functionEnv("worker"))),
  );
  const dlq = new LocalFunction(common("dlq", "dlq", functionEnv("dlq")));
  const sweeper = new LocalFunction(common("sweeper", "sweeper", functionEnv("sweeper")));
  const all = [http, ...workers, dlq, sweeper];

  const deliveries: Delivery[] = [];
  const recordDelivery = (queue: Delivery["queue"]) => (event: SQSEvent, fn: LocalFunction) => {
    for (const r of event.Records) {
      deliveries.push({
        queue,
        function: fn.name,
        messageId: r.messageId,
        receiveCount: Number(r.attributes.ApproximateReceiveCount),
        body: r.body,
        at: Date.now(),
      });
    }
  };
  const workSource = new SqsEventSource({
    client: sqs,
    queueUrl: queues.queueUrl,
    queueArn: queues.queueArn,
    functions: workers,
    waitSeconds: options.pollWaitSeconds,
    onError: (err, fn) => onError(err, fn.name),
    onDeliver: (event, fn) => {
      recordDelivery("work")(event, fn);
      options.beforeInvoke?.(event, fn);
    },
  });

  try {
    await Promise.all([http.start(), ...workers.map((w) => w.warm()), dlq.warm(), sweeper.warm()]);
  } catch (err) {
    await Promise.allSettled(all.map((f) => f.close()));
    sqs.destroy();
    await sqsLimits?.close();
    throw err;
  }
  workSource.start();

  const region = process.env.AWS_REGION ?? "us-east-1";
  const sweep = () => sweeper.invoke(scheduledEvent(region, name));
  const drainDeadLetters = () => dlq.invoke(scheduledEvent(region, name));
  // The sweep schedule has two targets, as the construct's rule: the sweeper and the dlq drain.
  const ticking = new Set<string>();
  const tick = (target: string, run: () => Promise<unknown>) => {
    if (ticking.has(target)) return; // an EventBridge tick would overlap; a skipped local tick is harmless
    ticking.add(target);
    run()
      .catch((err) => onError(err, target))
      .finally(() => ticking.delete(target));
  };
  let sweepTimer: NodeJS.Timeout | undefined;
  if (options.sweeperRateMs !== false) {
    sweepTimer = setInterval(() => {
      tick("sweeper", sweep);
      tick("dlq", drainDeadLetters);
    }, options.sweeperRateMs ?? 60_000);
    sweepTimer.unref();
  }

  async function extraFunction(role: HarnessFunctionRole, env: Record<string, string> = {}) {
    const fnName = `${role}-extra-${extras.length + 1}`;
    const config = common(role, fnName, { ...functionEnv(role), ...env });
    if (role === "http") {
      const fn = new LocalFunctionUrl(config);
      extras.push(fn);
      await fn.start();
      return fn;
    }
    const fn = new LocalFunction(config);
    extras.push(fn);
    await fn.warm();
    return fn;
  }

  async function scheduleFunction(): Promise<LocalFunction> {
    const env = { ...base, ...namesOnlyEnv, ...options.env };
    const fn = new LocalFunction({
      name: `schedule-${extras.length + 1}`,
      handlerModule: `${REPO_ROOT}src/lambda/schedule.ts`,
      agentsModule: options.agentsModule,
      timeoutMs: SCHEDULE_TIMEOUT_MS,
      env,
      log,
    });
    extras.push(fn);
    await fn.warm();
    return fn;
  }
  let sharedSchedule: Promise<LocalFunction> | undefined;
  async function fireSchedule(input: string, scheduledTime: string, fn?: LocalFunction): Promise<unknown> {
    const target = fn ?? (await (sharedSchedule ??= scheduleFunction()));
    return target.invoke(JSON.parse(input.replaceAll(SCHEDULED_TIME_ATTRIBUTE, scheduledTime)));
  }

  return {
    url: http.url,
    tableName,
    bucketName,
    ...queues,
    http,
    workers,
    dlq,
    sweeper,
    deliveries,
    functionEnv,
    sweep,
    drainDeadLetters,
    extraFunction: extraFunction as LocalCloud["extraFunction"],
    scheduleFunction,
    fireSchedule,
    async stop() {
      clearInterval(sweepTimer);
      await workSource.stop();
      await Promise.allSettled([...all, ...extras].map((f) => f.close()));
      sqs.destroy();
      await sqsLimits?.close();
    },
  };
}

async function createQueues(
  sqs: SQSClient,
  name: string,
  o: { visibilityTimeoutMs: number; dlqVisibilityTimeoutMs: number; maxReceiveCount: number },
) {
  const seconds = (ms: number) => String(Math.ceil(ms / 1000));
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}-dlq.fifo`,
      Attributes: {
        FifoQueue: "true",
        ContentBasedDeduplication: "false",
        VisibilityTimeout: seconds(o.dlqVisibilityTimeoutMs),
        MessageRetentionPeriod: String(14 * 24 * 3600),
      },
    }),
  );
  const deadLetterQueueArn = await queueArn(sqs, dlq.QueueUrl!);
  const work = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}-work.fifo`,
      Attributes: {
        FifoQueue: "true",
        // Senders use fresh deduplication ids (a re-ring must never be swallowed).
        ContentBasedDeduplication: "false",
        VisibilityTimeout: seconds(o.visibilityTimeoutMs),
        MessageRetentionPeriod: String(4 * 24 * 3600),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetterQueueArn, maxReceiveCount: o.maxReceiveCount }),
      },
    }),
  );
  return {
    queueUrl: work.QueueUrl!,
    queueArn: await queueArn(sqs, work.QueueUrl!),
    deadLetterQueueUrl: dlq.QueueUrl!,
    deadLetterQueueArn,
  };
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }));
  return out.Attributes!.QueueArn!;
}

function scheduledEvent(region: string, name: string): ScheduledEvent {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: "000000000000",
    time: new Date().toISOString(),
    region,
    resources: [`arn:aws:events:${region}:000000000000:rule/${name}-sweep`],
    detail: {},
  };
}
