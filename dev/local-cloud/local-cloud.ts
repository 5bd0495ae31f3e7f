/**
 * The serverless shape on one machine (`npm run dev:aws`, the Lambda tests, `harness rehearse`),
 * brought up from a synthesized stack: the CloudFormation template of a cloud assembly
 * (`cdk.out`, see `cloud-assembly.ts`) says which functions run (each one's bundled asset,
 * handler, environment, memory, timeout and reserved concurrency), which queues, table and bucket
 * exist and how (`stack-resources.ts`), which function the URL serves, what the SQS event source
 * mapping feeds (batch size, maximum concurrency, `ReportBatchItemFailures`) and which functions
 * the schedules fire. Every function runs in child processes with only its own environment, so
 * the code under test is exactly what `cdk deploy` uploads; with `iam` (the default) every AWS
 * call a function makes is checked against its role's policy from the template first
 * (`iam-gate.ts`). What the template declares that this cannot emulate is in `notEmulated`.
 */
import { randomUUID } from "node:crypto";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { ScheduledEvent, SQSEvent } from "aws-lambda";
import type { HarnessFunctionRole } from "../../src/lambda/env.ts";
import { SCHEDULED_TIME_ATTRIBUTE } from "../../src/runtime/scheduled-dispatch.ts";
import { type ResolveContext, resolveIntrinsics, UnresolvableReference } from "./cfn-intrinsics.ts";
import { LocalFunction, LocalFunctionUrl, type LogSink } from "./function-host.ts";
import { type IamGate, startIamGate } from "./iam-gate.ts";
import { SqsEventSource } from "./sqs-event-source.ts";
import { startSqsLimitsProxy, type SqsLimitsProxy } from "./sqs-limits-proxy.ts";
import { createStackResources, LOCAL_ACCOUNT } from "./stack-resources.ts";
import { readStackTemplate, type StackTemplate, type TemplateFunction, type TemplateFunctionRole } from "./stack-template.ts";

/** The emulator environment variables the functions inherit (endpoints, region, credentials). */
const PASSED_THROUGH = [
  "AWS_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_ENDPOINT_URL_DYNAMODB",
  "AWS_ENDPOINT_URL_SQS",
  "AWS_ENDPOINT_URL_S3",
  "AWS_ENDPOINT_URL_SSM",
  "AWS_ENDPOINT_URL_SECRETS_MANAGER",
  "PATH",
  "HOME",
  "TZ",
];

export interface LocalCloudOptions {
  /** The synthesized app: a cloud assembly directory (`cdk.out`; `cloud-assembly.ts` makes one). */
  assembly: string;
  /** The stack of the assembly to bring up; default its only one. */
  stackName?: string;
  /**
   * Check every AWS call of a function against its role's policy from the template (default
   * true): a call the role does not allow is refused as AWS refuses it.
   */
  iam?: boolean;
  /**
   * The endpoints behind the IAM gate, per service (default the emulators' from
   * `AWS_ENDPOINT_URL_*`): a test's fault-injecting proxy goes here, so IAM stays on in front of it.
   */
  upstream?: { dynamodb?: string; sqs?: string; s3?: string };
  /** Values of the secrets the template references: SSM parameter names, Secrets Manager ARNs or names. */
  secrets?: Record<string, string>;
  /**
   * Replaces a function's code with a handler module (the bench's own bundles; a `.ts` module
   * runs from the sources with `agentsModule` bound to `#harness-agents`). Everything else about
   * the function still comes from the template.
   */
  handlers?: Partial<Record<HarnessFunctionRole, string>>;
  /** The module bound to `#harness-agents` for a `.ts` handler of `handlers`. */
  agentsModule?: string;
  /** Prefix of the table, bucket and queue names; default `harness-local-<random>`. */
  name?: string;
  /** Function URL port; default 0 (any free port). */
  port?: number;
  host?: string;
  /**
   * Worker containers polling the work queue (Lambda's concurrency). Default 2, or less when the
   * template caps the worker (reserved concurrency, the event source's maximum concurrency);
   * more than the cap is refused.
   */
  workers?: number;
  /**
   * Test knobs that shorten what the template says (a test cannot wait 15 minutes for a
   * worker's timeout): each replaces the template's value of that setting.
   */
  workerTimeoutMs?: number;
  httpTimeoutMs?: number;
  streamMaxMs?: number;
  /**
   * The function URL's streamed-response maximum (`function-url-limits.ts`); default Lambda's
   * 200 MB. Lowered by a test to reach the limit cheaply.
   */
  streamedResponseMaxBytes?: number;
  dlqTimeoutMs?: number;
  sweeperTimeoutMs?: number;
  queueVisibilityTimeoutMs?: number;
  maxReceiveCount?: number;
  /**
   * How often the sweep rule fires (the sweeper and the dlq drain); default the template's rate;
   * `false`: only when `sweep()` / `drainDeadLetters()` is called.
   */
  sweeperRateMs?: number | false;
  /** Long-poll wait of the event sources, seconds. Default 1. */
  pollWaitSeconds?: number;
  /** Extra environment for every function (as the construct's `environment` prop: HARNESS_LEASE_MS, provider keys). */
  env?: Record<string, string>;
  /** Extra environment per role (wins over `env`). */
  functionEnv?: Partial<Record<HarnessFunctionRole, Record<string, string>>>;
  /**
   * Memory size per role as a hard limit on each container (`LocalFunctionOptions.memoryMb`);
   * default the template's `MemorySize`; `false`: unlimited.
   */
  memoryMb?: Partial<Record<HarnessFunctionRole, number | false>>;
  /** Function output; default: stderr with a `[name]` prefix. */
  log?: LogSink;
  /** Event-source and schedule failures; default: logged through `log`. */
  onError?: (err: unknown, source: string) => void;
  /**
   * Called with each event the work queue's event source received, just before it invokes `fn`
   * with it: a test may kill `fn`'s container here, as an init failure or a crash of the runtime
   * before the handler ends a real invocation.
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
  /** What the template declares that the local cloud does not emulate, one line each. */
  readonly notEmulated: readonly string[];
  /** The IAM gate (every call a function made, allowed or refused), when `iam` is on. */
  readonly iam?: IamGate;
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
  /** Starts one more container of the template's schedule function; closed with the cloud. */
  scheduleFunction(): Promise<LocalFunction>;
  /**
   * Fires a schedule as EventBridge Scheduler does: the target's `input` with the scheduled-time
   * attribute replaced by `scheduledTime`, handed to the schedule function (`fn`, default one
   * shared container). Resolves with its answer; rejects when the invocation fails.
   */
  fireSchedule(input: string, scheduledTime: string, fn?: LocalFunction): Promise<unknown>;
  /** Stops the schedule, the event sources and every function. */
  stop(): Promise<void>;
}

/** `rate(5 minutes)` in ms; undefined for cron(…) and at(…). */
export function rateMs(expression: string): number | undefined {
  const m = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/.exec(expression.trim());
  if (!m) return undefined;
  const unit = m[2]!.startsWith("minute") ? 60_000 : m[2]!.startsWith("hour") ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}

/** Creates the stack's resources on the emulators named by `AWS_ENDPOINT_URL_*` and starts everything. */
export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  const stack = readStackTemplate(options.assembly, options.stackName);
  const notEmulated = [...stack.notEmulated];
  const fnOf = (role: TemplateFunctionRole): TemplateFunction | undefined => stack.functions.find((f) => f.role === role);
  const need = (role: HarnessFunctionRole): TemplateFunction => {
    const fn = fnOf(role);
    if (!fn) throw new Error(`${options.assembly}: the stack ${stack.stackName} has no ${role} function (is it a Harness?)`);
    return fn;
  };
  const templateFns = { http: need("http"), worker: need("worker"), dlq: need("dlq"), sweeper: need("sweeper") };
  const scheduleTemplate = fnOf("schedule");
  const workSourceT = stack.eventSources.find((e) => e.functionLogicalId === templateFns.worker.logicalId)!;

  const name = options.name ?? `harness-local-${randomUUID().slice(0, 8)}`;
  const region = process.env.AWS_REGION ?? "us-east-1";
  const log: LogSink = options.log ?? ((line, source) => process.stderr.write(`[${source}] ${line}\n`));
  const onError = options.onError ?? ((err, source) => log(`event source error: ${String(err)}`, source));

  // The test knobs, applied to the template before anything is created.
  const timeouts: Record<HarnessFunctionRole, number> = {
    http: options.httpTimeoutMs ?? templateFns.http.timeoutMs,
    worker: options.workerTimeoutMs ?? templateFns.worker.timeoutMs,
    dlq: options.dlqTimeoutMs ?? templateFns.dlq.timeoutMs,
    sweeper: options.sweeperTimeoutMs ?? templateFns.sweeper.timeoutMs,
  };
  const workQueueT = stack.queues.find((q) => q.logicalId === workSourceT.queueLogicalId)!;
  if (options.queueVisibilityTimeoutMs !== undefined) workQueueT.properties.VisibilityTimeout = Math.ceil(options.queueVisibilityTimeoutMs / 1000);
  else if (options.workerTimeoutMs !== undefined) workQueueT.properties.VisibilityTimeout = Math.ceil(options.workerTimeoutMs / 1000) + 60;
  if (options.maxReceiveCount !== undefined && workQueueT.properties.RedrivePolicy) workQueueT.properties.RedrivePolicy.maxReceiveCount = options.maxReceiveCount;
  const dlqQueueId = (() => {
    const url = templateFns.dlq.environment.DEAD_LETTER_QUEUE_URL as { Ref?: string } | undefined;
    return url?.Ref;
  })();
  if (options.dlqTimeoutMs !== undefined && dlqQueueId) {
    const q = stack.queues.find((x) => x.logicalId === dlqQueueId);
    if (q) q.properties.VisibilityTimeout = Math.ceil(options.dlqTimeoutMs / 1000) + 60;
  }
  if (Number(workQueueT.properties.VisibilityTimeout ?? 30) * 1000 < timeouts.worker) {
    // Lambda refuses such an event source: a message would come back while its worker still runs.
    throw new Error("startLocalCloud: the work queue's visibility timeout must be at least the worker's timeout");
  }
  const cap = Math.min(templateFns.worker.reservedConcurrency ?? Infinity, workSourceT.maximumConcurrency ?? Infinity);
  if (options.workers !== undefined && options.workers > cap) {
    throw new Error(`startLocalCloud: workers ${options.workers} exceeds the worker's concurrency in the template (${cap})`);
  }
  const workerCount = options.workers ?? Math.min(2, cap);
  if (workerCount < 1) throw new Error("startLocalCloud: the template gives the worker no concurrency (reserved concurrency 0)");

  const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS || undefined });
  const ctxBase: Omit<ResolveContext, "resources"> = { region, account: LOCAL_ACCOUNT, stackName: stack.stackName, parameters: stack.parameters };
  const created = await createStackResources(stack, name, sqs, ctxBase);
  const ctx: ResolveContext = { ...ctxBase, resources: created.resources };
  const workQueue = created.queues.get(workSourceT.queueLogicalId)!;
  const deadLetterQueue = dlqQueueId ? created.queues.get(dlqQueueId) : undefined;

  const base: Record<string, string> = {};
  for (const key of PASSED_THROUGH) if (process.env[key] !== undefined) base[key] = process.env[key]!;
  // The functions reach SQS through a proxy holding the limits fauxqs does not (sqs-limits-proxy.ts, ADR 0049);
  // with the IAM gate on, the gate forwards to it.
  const sqsLimits: SqsLimitsProxy | undefined = base.AWS_ENDPOINT_URL_SQS ? await startSqsLimitsProxy(base.AWS_ENDPOINT_URL_SQS) : undefined;
  if (sqsLimits) base.AWS_ENDPOINT_URL_SQS = sqsLimits.url;
  // Lambda's runtime would publish metrics through CloudWatch's log ingestion; locally they would be noise.
  base.POWERTOOLS_METRICS_DISABLED = "true";

  const resolvedEnv = new Map<string, Record<string, string>>();
  const templateEnv = (fn: TemplateFunction): Record<string, string> => {
    let env = resolvedEnv.get(fn.logicalId);
    if (!env) {
      env = {};
      for (const [key, value] of Object.entries(fn.environment)) {
        try {
          const v = resolveIntrinsics(value, ctx);
          if (v !== undefined) env[key] = typeof v === "string" ? v : JSON.stringify(v);
        } catch (err) {
          if (!(err instanceof UnresolvableReference)) throw err;
          notEmulated.push(`function ${fn.logicalId}: environment ${key} (${err.message}; left unset)`);
        }
      }
      resolvedEnv.set(fn.logicalId, env);
    }
    return env;
  };

  const gate = options.iam === false ? undefined : await startIamGate({ stack, ctx, log, secrets: options.secrets, upstream: { ...(sqsLimits ? { sqs: sqsLimits.url } : {}), ...options.upstream } });
  const fnName = (fn: TemplateFunction) => created.resources.get(fn.logicalId)!.ref;
  const environmentOf = (fn: TemplateFunction, role: TemplateFunctionRole): Record<string, string> => ({
    ...base,
    ...(gate ? gate.environmentFor(fn) : {}),
    ...templateEnv(fn),
    ...(role === "http" && options.streamMaxMs !== undefined ? { HARNESS_STREAM_MAX_MS: String(options.streamMaxMs) } : {}),
    ...options.env,
    ...(role === "schedule" ? {} : options.functionEnv?.[role]),
  });
  const functionEnv = (role: HarnessFunctionRole) => environmentOf(templateFns[role], role);
  const memoryOf = (role: HarnessFunctionRole): number | undefined => {
    const given = options.memoryMb?.[role];
    return given === false ? undefined : (given ?? templateFns[role].memoryMb);
  };
  const common = (role: HarnessFunctionRole, containerName: string, env: Record<string, string>) => ({
    name: containerName,
    handlerModule: options.handlers?.[role] ?? templateFns[role].handlerModule,
    handlerExport: options.handlers?.[role] ? "handler" : templateFns[role].handlerExport,
    agentsModule: options.agentsModule ?? "",
    timeoutMs: timeouts[role],
    env: { ...env, AWS_LAMBDA_FUNCTION_NAME: fnName(templateFns[role]) },
    memoryMb: memoryOf(role),
    log,
  });

  const extras: Array<{ close(): Promise<void> }> = [];
  const http = new LocalFunctionUrl({
    ...common("http", "http", functionEnv("http")),
    port: options.port,
    host: options.host,
    streamedResponseMaxBytes: options.streamedResponseMaxBytes,
  });
  const workers = Array.from({ length: workerCount }, (_, i) => new LocalFunction(common("worker", `worker-${i + 1}`, functionEnv("worker"))));
  const dlq = new LocalFunction(common("dlq", "dlq", functionEnv("dlq")));
  const sweeper = new LocalFunction(common("sweeper", "sweeper", functionEnv("sweeper")));
  const all = [http, ...workers, dlq, sweeper];

  // Lambda's pollers receive and delete with the function's role, and read the queue's attributes
  // when the mapping is created: behind the gate, they sign as the worker.
  const workerAccess = gate?.environmentFor(templateFns.worker);
  const pollerSqs = workerAccess
    ? new SQSClient({
        endpoint: workerAccess.AWS_ENDPOINT_URL_SQS,
        credentials: { accessKeyId: workerAccess.AWS_ACCESS_KEY_ID!, secretAccessKey: workerAccess.AWS_SECRET_ACCESS_KEY! },
        maxAttempts: 1,
      })
    : sqs;
  if (workerAccess) {
    await pollerSqs.send(new GetQueueAttributesCommand({ QueueUrl: workQueue.url, AttributeNames: ["All"] })).catch((err: unknown) => {
      notEmulated.push(`the worker's event source mapping would not be created: ${String(err)}`);
      onError(err, "event-source");
    });
  }
  const deliveries: Delivery[] = [];
  const workSource = new SqsEventSource({
    client: pollerSqs,
    queueUrl: workQueue.url,
    queueArn: workQueue.arn,
    functions: workers,
    batchSize: workSourceT.batchSize,
    reportBatchItemFailures: workSourceT.reportBatchItemFailures,
    waitSeconds: options.pollWaitSeconds,
    onError: (err, fn) => onError(err, fn.name),
    onDeliver: (event, fn) => {
      for (const r of event.Records) {
        deliveries.push({ queue: "work", function: fn.name, messageId: r.messageId, receiveCount: Number(r.attributes.ApproximateReceiveCount), body: r.body, at: Date.now() });
      }
      options.beforeInvoke?.(event, fn);
    },
  });

  try {
    await Promise.all([http.start(), ...workers.map((w) => w.warm()), dlq.warm(), sweeper.warm()]);
  } catch (err) {
    await Promise.allSettled(all.map((f) => f.close()));
    await gate?.close();
    sqs.destroy();
    await sqsLimits?.close();
    throw err;
  }
  workSource.start();

  const sweep = () => sweeper.invoke(scheduledEvent(region, name));
  const drainDeadLetters = () => dlq.invoke(scheduledEvent(region, name));
  // The rules of the template: each target ticks at its rule's rate (the sweep rule has two: the sweeper and the dlq drain).
  const ticking = new Set<string>();
  const tick = (target: string, run: () => Promise<unknown>) => {
    if (ticking.has(target)) return; // an EventBridge tick would overlap; a skipped local tick is harmless
    ticking.add(target);
    run()
      .catch((err) => onError(err, target))
      .finally(() => ticking.delete(target));
  };
  const timers: NodeJS.Timeout[] = [];
  const targets = new Map<string, { name: string; run: () => Promise<unknown> }>([
    [templateFns.sweeper.logicalId, { name: "sweeper", run: sweep }],
    [templateFns.dlq.logicalId, { name: "dlq", run: drainDeadLetters }],
  ]);
  for (const rule of stack.schedules) {
    const target = targets.get(rule.functionLogicalId);
    if (!target) {
      if (rule.functionLogicalId !== scheduleTemplate?.logicalId) notEmulated.push(`schedule ${rule.logicalId}: its target ${rule.functionLogicalId} is not run locally`);
      else notEmulated.push(`schedule ${rule.logicalId} (${rule.expression}): fired on demand only (fireSchedule)`);
      continue;
    }
    const every = options.sweeperRateMs === false ? undefined : (options.sweeperRateMs ?? rateMs(rule.expression));
    if (every === undefined) {
      if (options.sweeperRateMs !== false) notEmulated.push(`rule ${rule.logicalId} (${rule.expression}): fired on demand only`);
      continue;
    }
    const timer = setInterval(() => tick(target.name, target.run), every);
    timer.unref();
    timers.push(timer);
  }

  async function extraFunction(role: HarnessFunctionRole, env: Record<string, string> = {}) {
    const config = common(role, `${role}-extra-${extras.length + 1}`, { ...functionEnv(role), ...env });
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
    if (!scheduleTemplate) throw new Error(`the stack ${stack.stackName} has no schedule function (its Harness has no schedules)`);
    const fn = new LocalFunction({
      name: `schedule-${extras.length + 1}`,
      handlerModule: scheduleTemplate.handlerModule,
      handlerExport: scheduleTemplate.handlerExport,
      agentsModule: "",
      timeoutMs: scheduleTemplate.timeoutMs,
      env: { ...environmentOf(scheduleTemplate, "schedule"), AWS_LAMBDA_FUNCTION_NAME: fnName(scheduleTemplate) },
      memoryMb: scheduleTemplate.memoryMb,
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
    tableName: created.tableName,
    bucketName: created.bucketName,
    queueUrl: workQueue.url,
    queueArn: workQueue.arn,
    deadLetterQueueUrl: deadLetterQueue?.url ?? "",
    deadLetterQueueArn: deadLetterQueue?.arn ?? "",
    http,
    workers,
    dlq,
    sweeper,
    deliveries,
    notEmulated,
    iam: gate,
    functionEnv,
    sweep,
    drainDeadLetters,
    extraFunction: extraFunction as LocalCloud["extraFunction"],
    scheduleFunction,
    fireSchedule,
    async stop() {
      for (const t of timers) clearInterval(t);
      await workSource.stop();
      await Promise.allSettled([...all, ...extras].map((f) => f.close()));
      await gate?.close();
      sqs.destroy();
      if (pollerSqs !== sqs) pollerSqs.destroy();
      await sqsLimits?.close();
    },
  };
}

function scheduledEvent(region: string, name: string): ScheduledEvent {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: LOCAL_ACCOUNT,
    time: new Date().toISOString(),
    region,
    resources: [`arn:aws:events:${region}:${LOCAL_ACCOUNT}:rule/${name}-sweep`],
    detail: {},
  };
}

export type { StackTemplate };
