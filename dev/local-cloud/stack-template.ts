/**
 * A synthesized harness stack as the local cloud brings it up: the CloudFormation template of a
 * cloud assembly (`cdk.out`) read into the functions (each one's asset, handler, environment,
 * memory, timeout, reserved concurrency and role), the queues, the table, the bucket, the event
 * source mapping, the function URL, the sweep rule, the schedules and each role's policy. Values
 * stay as the template has them (intrinsics unresolved): the local cloud resolves them once its
 * resources have names. Whatever the template declares that the local cloud does not bring up is
 * listed in {@link StackTemplate.notEmulated}.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { HarnessFunctionRole } from "../../src/lambda/env.ts";

type Resource = { Type: string; Properties?: Record<string, any>; Metadata?: Record<string, any> };

/** A function role of the local cloud: the four of the serverless shape, and the schedule function. */
export type TemplateFunctionRole = HarnessFunctionRole | "schedule";

export interface TemplateFunction {
  logicalId: string;
  role: TemplateFunctionRole;
  /** Absolute path of the entry file in the asset directory (e.g. `…/asset.<hash>/worker.mjs`). */
  handlerModule: string;
  handlerExport: string;
  /** The environment as the template has it (intrinsics unresolved). */
  environment: Record<string, unknown>;
  memoryMb: number;
  timeoutMs: number;
  reservedConcurrency?: number;
  /** Logical id of the execution role. */
  roleLogicalId?: string;
}

export interface TemplateQueue {
  logicalId: string;
  properties: Record<string, any>;
}

export interface TemplateEventSource {
  functionLogicalId: string;
  queueLogicalId: string;
  batchSize: number;
  maximumConcurrency?: number;
  reportBatchItemFailures: boolean;
}

/** One IAM policy attached to roles (statements unresolved). */
export interface TemplatePolicy {
  logicalId: string;
  roles: string[];
  document: unknown;
}

export interface TemplateSchedule {
  logicalId: string;
  expression: string;
  functionLogicalId: string;
  /** The target's input (a schedule's firing), if any. */
  input?: string;
}

export interface StackTemplate {
  stackName: string;
  functions: TemplateFunction[];
  queues: TemplateQueue[];
  table?: { logicalId: string; properties: Record<string, any> };
  bucket?: { logicalId: string; properties: Record<string, any> };
  eventSources: TemplateEventSource[];
  url?: { functionLogicalId: string; authType: string; invokeMode?: string; cors?: unknown };
  /** `AWS::Events::Rule` schedules (the sweep) and `AWS::Scheduler::Schedule`s, one per target. */
  schedules: TemplateSchedule[];
  policies: TemplatePolicy[];
  /** Logical ids of the template's resources (for the resolver: roles, log groups, …). */
  resourceTypes: Map<string, string>;
  /** What the template asks that the local cloud does not emulate, one line each. */
  notEmulated: string[];
  parameters: Record<string, string>;
}

/** Types the local cloud brings up or needs nothing of. */
const HANDLED = new Set([
  "AWS::Lambda::Function",
  "AWS::Lambda::EventSourceMapping",
  "AWS::Lambda::Url",
  "AWS::Lambda::Permission",
  "AWS::SQS::Queue",
  "AWS::SQS::QueuePolicy",
  "AWS::DynamoDB::GlobalTable",
  "AWS::DynamoDB::Table",
  "AWS::S3::Bucket",
  "AWS::S3::BucketPolicy",
  "AWS::IAM::Role",
  "AWS::IAM::Policy",
  "AWS::Events::Rule",
  "AWS::Scheduler::Schedule",
  "AWS::CDK::Metadata",
]);

const logicalIdOf = (value: unknown): string | undefined => {
  if (value && typeof value === "object") {
    const v = value as Record<string, unknown>;
    if (typeof v.Ref === "string") return v.Ref;
    const att = v["Fn::GetAtt"];
    if (Array.isArray(att)) return String(att[0]);
    if (typeof att === "string") return att.split(".")[0];
  }
  return undefined;
};

/** Reads `<assemblyDir>/<stack>.template.json` (the only stack, or `stackName`). */
export function readStackTemplate(assemblyDir: string, stackName?: string): StackTemplate {
  const manifest = JSON.parse(readFileSync(join(assemblyDir, "manifest.json"), "utf8")) as {
    artifacts?: Record<string, { type: string; properties?: { templateFile?: string }; displayName?: string }>;
  };
  const stacks = Object.entries(manifest.artifacts ?? {}).filter(([, a]) => a.type === "aws:cloudformation:stack");
  const chosen = stackName ? stacks.find(([id, a]) => id === stackName || a.displayName === stackName) : stacks.length === 1 ? stacks[0] : undefined;
  if (!chosen) {
    throw new Error(`${assemblyDir}: ${stackName ? `no stack ${stackName}` : "name a stack"} (stacks: ${stacks.map(([id]) => id).join(", ") || "none"})`);
  }
  const templateFile = join(assemblyDir, chosen[1].properties!.templateFile!);
  return parseStackTemplate(JSON.parse(readFileSync(templateFile, "utf8")), assemblyDir, chosen[0]);
}

/**
 * The asset directory of each asset object key (`<hash>.zip` → `asset.<hash>`), from the stack's
 * asset manifest: a template synthesized without the CLI has no `aws:asset:path` metadata.
 */
function assetDirectories(assemblyDir: string, stackName: string): (objectKey: unknown) => string | undefined {
  const byKey = new Map<string, string>();
  const file = join(assemblyDir, `${stackName}.assets.json`);
  if (existsSync(file)) {
    const manifest = JSON.parse(readFileSync(file, "utf8")) as { files?: Record<string, { source?: { path?: string }; destinations?: Record<string, { objectKey?: string }> }> };
    for (const asset of Object.values(manifest.files ?? {})) {
      for (const d of Object.values(asset.destinations ?? {})) if (d.objectKey && asset.source?.path) byKey.set(d.objectKey, asset.source.path);
    }
  }
  return (objectKey) => (typeof objectKey === "string" ? byKey.get(objectKey) : undefined);
}

/** Reads a template already parsed; assets are looked up under `assemblyDir`. */
export function parseStackTemplate(template: { Resources?: Record<string, Resource>; Parameters?: Record<string, any> }, assemblyDir: string, stackName: string): StackTemplate {
  const resources = template.Resources ?? {};
  const assetDirOf = assetDirectories(assemblyDir, stackName);
  const byType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const notEmulated: string[] = [];
  const resourceTypes = new Map(Object.entries(resources).map(([id, r]) => [id, r.Type]));

  const url = byType("AWS::Lambda::Url")[0];
  const urlFunction = url ? logicalIdOf(url[1].Properties?.TargetFunctionArn) : undefined;
  const eventSources: TemplateEventSource[] = byType("AWS::Lambda::EventSourceMapping").map(([, r]) => {
    const p = r.Properties ?? {};
    return {
      functionLogicalId: logicalIdOf(p.FunctionName)!,
      queueLogicalId: logicalIdOf(p.EventSourceArn)!,
      batchSize: p.BatchSize ?? 10,
      maximumConcurrency: p.ScalingConfig?.MaximumConcurrency,
      reportBatchItemFailures: (p.FunctionResponseTypes ?? []).includes("ReportBatchItemFailures"),
    };
  });
  const ruleTargets = byType("AWS::Events::Rule").flatMap(([id, r]) =>
    ((r.Properties?.Targets ?? []) as Array<Record<string, unknown>>).map((t) => ({
      logicalId: id,
      expression: String(r.Properties?.ScheduleExpression ?? ""),
      functionLogicalId: logicalIdOf(t.Arn)!,
      input: typeof t.Input === "string" ? t.Input : undefined,
    })),
  );
  const schedulerTargets = byType("AWS::Scheduler::Schedule").map(([id, r]) => ({
    logicalId: id,
    expression: String(r.Properties?.ScheduleExpression ?? ""),
    functionLogicalId: logicalIdOf(r.Properties?.Target?.Arn)!,
    input: typeof r.Properties?.Target?.Input === "string" ? (r.Properties.Target.Input as string) : undefined,
  }));

  const roleOf = (id: string, env: Record<string, unknown>): TemplateFunctionRole | undefined => {
    if (id === urlFunction) return "http";
    if (eventSources.some((e) => e.functionLogicalId === id)) return "worker";
    if ("DEAD_LETTER_QUEUE_URL" in env) return "dlq";
    if (schedulerTargets.some((s) => s.functionLogicalId === id)) return "schedule";
    if (ruleTargets.some((s) => s.functionLogicalId === id)) return "sweeper";
    // Without a URL (the API Gateway shape) the http function is the one with the stream limit.
    if ("HARNESS_STREAM_MAX_MS" in env) return "http";
    return undefined;
  };

  const functions: TemplateFunction[] = [];
  for (const [id, r] of byType("AWS::Lambda::Function")) {
    const p = r.Properties ?? {};
    const env = (p.Environment?.Variables ?? {}) as Record<string, unknown>;
    const role = roleOf(id, env);
    const assetPath = (r.Metadata?.["aws:asset:path"] as string | undefined) ?? assetDirOf(p.Code?.S3Key);
    if (!role || !assetPath) {
      // The CDK's own helpers (log retention, custom resources) or a function of the user's.
      notEmulated.push(`function ${id}${role ? " (its code is not a local asset)" : " (not one of the harness's: not run)"}`);
      continue;
    }
    const [file, handlerExport] = String(p.Handler ?? "index.handler").split(/\.(?=[^.]+$)/) as [string, string];
    functions.push({
      logicalId: id,
      role,
      handlerModule: join(assemblyDir, assetPath, `${file}.mjs`),
      handlerExport,
      environment: env,
      memoryMb: p.MemorySize ?? 128,
      timeoutMs: (p.Timeout ?? 3) * 1000,
      reservedConcurrency: p.ReservedConcurrentExecutions,
      roleLogicalId: logicalIdOf(p.Role),
    });
    if (p.Architectures?.[0] && p.Architectures[0] !== process.arch.replace("x64", "x86_64")) {
      notEmulated.push(`function ${id}: architecture ${p.Architectures[0]} (runs on this machine's ${process.arch})`);
    }
    if (p.Runtime && !String(p.Runtime).startsWith("nodejs")) notEmulated.push(`function ${id}: runtime ${p.Runtime}`);
    if (p.TracingConfig?.Mode === "Active") notEmulated.push(`function ${id}: X-Ray active tracing (no daemon locally)`);
    if (p.Layers) notEmulated.push(`function ${id}: layers (not loaded)`);
  }

  const table = [...byType("AWS::DynamoDB::GlobalTable"), ...byType("AWS::DynamoDB::Table")][0];
  const bucket = byType("AWS::S3::Bucket")[0];
  if (table) {
    const p = table[1].Properties ?? {};
    if (p.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled || p.Replicas?.some((x: any) => x.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled)) {
      notEmulated.push(`table ${table[0]}: point-in-time recovery`);
    }
    if (p.DeletionProtectionEnabled || p.Replicas?.some((x: any) => x.DeletionProtectionEnabled)) notEmulated.push(`table ${table[0]}: deletion protection`);
  }
  if (bucket) {
    const p = bucket[1].Properties ?? {};
    if (p.LifecycleConfiguration) notEmulated.push(`bucket ${bucket[0]}: lifecycle rules (${(p.LifecycleConfiguration.Rules ?? []).map((r: any) => r.Id).join(", ")}) are not applied by fauxqs`);
    if (p.CorsConfiguration) notEmulated.push(`bucket ${bucket[0]}: CORS (fauxqs answers every origin)`);
    if (p.BucketEncryption) notEmulated.push(`bucket ${bucket[0]}: encryption at rest`);
    if (p.LoggingConfiguration) notEmulated.push(`bucket ${bucket[0]}: server access logs`);
  }
  for (const [id] of byType("AWS::S3::BucketPolicy")) notEmulated.push(`bucket policy ${id} (resource policies are not evaluated; identity policies are)`);
  for (const [id] of byType("AWS::SQS::QueuePolicy")) notEmulated.push(`queue policy ${id} (resource policies are not evaluated; identity policies are)`);
  for (const [id, r] of byType("AWS::SQS::Queue")) {
    if (r.Properties?.SqsManagedSseEnabled || r.Properties?.KmsMasterKeyId) notEmulated.push(`queue ${id}: encryption at rest`);
  }
  if (url && url[1].Properties?.AuthType === "AWS_IAM") {
    notEmulated.push("function URL: AuthType AWS_IAM (callers are not SigV4-checked locally; the URL is open)");
  }
  const kinds = new Map<string, number>();
  for (const r of Object.values(resources)) if (!HANDLED.has(r.Type)) kinds.set(r.Type, (kinds.get(r.Type) ?? 0) + 1);
  for (const [type, n] of [...kinds].sort()) notEmulated.push(`${type}${n > 1 ? ` ×${n}` : ""}`);

  const parameters: Record<string, string> = {};
  for (const [name, p] of Object.entries(template.Parameters ?? {})) if (p?.Default !== undefined) parameters[name] = String(p.Default);

  return {
    stackName,
    functions,
    queues: byType("AWS::SQS::Queue").map(([logicalId, r]) => ({ logicalId, properties: r.Properties ?? {} })),
    table: table && { logicalId: table[0], properties: table[1].Properties ?? {} },
    bucket: bucket && { logicalId: bucket[0], properties: bucket[1].Properties ?? {} },
    eventSources,
    url: url && urlFunction ? { functionLogicalId: urlFunction, authType: url[1].Properties?.AuthType, invokeMode: url[1].Properties?.InvokeMode, cors: url[1].Properties?.Cors } : undefined,
    schedules: [...ruleTargets, ...schedulerTargets],
    policies: byType("AWS::IAM::Policy").map(([logicalId, r]) => ({
      logicalId,
      roles: ((r.Properties?.Roles ?? []) as unknown[]).map(logicalIdOf).filter((x): x is string => x !== undefined),
      document: r.Properties?.PolicyDocument,
    })),
    resourceTypes,
    notEmulated,
    parameters,
  };
}
