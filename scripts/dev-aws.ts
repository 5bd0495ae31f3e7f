/**
 * `npm run dev:aws`: the serverless shape on this machine, from the synthesized template. Synthesizes
 * the app (APP, a CDK app command; default the basic example's `examples/basic/cdk-app.ts` over
 * AGENTS), starts DynamoDB Local and fauxqs (SQS + S3), creates the table, bucket and queues as
 * the template declares them, serves the http function's asset as a streaming function URL and
 * runs the worker, dlq and sweeper assets the way their event source and schedule would, each
 * function's AWS calls checked against its role's policy (IAM=0 turns that off). Prints what the
 * template declares that the local cloud cannot emulate.
 *
 * Environment: PORT (8484; 0 = any free port), APP (a CDK app command), AGENTS (module exporting
 * `agents`, for the default app), WORKERS (2),
 * WORKER_TIMEOUT_MS and SWEEPER_RATE_MS (default the template's), IAM (1), DATA_DIR (persist DynamoDB Local there;
 * default in memory), VERBOSE=1 (function logs at INFO and EMF metrics). Any HARNESS_* and MODEL
 * variable, and provider credentials, are passed to the functions.
 */
import { resolve } from "node:path";
import { cachedAssembly, exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { listenFailureHint } from "../src/server/listen-failed.ts";
import { checkPortFree } from "../src/server/port-check.ts";
import { startEmulators } from "../test/support/emulators.ts";

const env = process.env;
const port = env.PORT === undefined || env.PORT === "" ? 8484 : Number(env.PORT);
const verbose = env.VERBOSE === "1" || env.VERBOSE === "true";
const positive = (name: string, fallback: number) => {
  const raw = env[name];
  const v = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isFinite(v) || v <= 0) fail(`${name} must be a positive number, got ${raw}`);
  return v;
};
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`PORT must be a port number, got ${env.PORT}`);
// Before the emulators (tens of seconds): a busy port fails now, in one line.
await checkPortFree(port, "127.0.0.1").catch((err: unknown) => fail(listenFailureHint(err) ?? String(err)));

const started = performance.now();
const assembly = env.APP ? cachedAssembly({ app: env.APP }) : exampleAssembly(resolve(env.AGENTS || "examples/basic/agents.ts"));
console.log(`${assembly.cached ? "cloud assembly (cached)" : "synthesized"}: ${assembly.dir} in ${Math.round(assembly.ms)} ms`);
const emulators = await startEmulators({ dynamoDbPath: env.DATA_DIR ? resolve(env.DATA_DIR) : undefined });
Object.assign(process.env, emulators.env);

// Settings and secrets the functions would get from the construct's `environment` prop.
const passed: Record<string, string> = {};
for (const [k, v] of Object.entries(env)) {
  if (v !== undefined && /^(HARNESS_|MODEL$|[A-Z0-9_]*_API_KEY$|AWS_BEARER_TOKEN_BEDROCK$)/.test(k)) passed[k] = v;
}
Object.assign(passed, verbose ? { POWERTOOLS_LOG_LEVEL: "INFO", POWERTOOLS_METRICS_DISABLED: "false" } : { POWERTOOLS_LOG_LEVEL: "WARN" });

let cloud: Awaited<ReturnType<typeof startLocalCloud>>;
try {
  cloud = await startLocalCloud({
    assembly: assembly.dir,
    iam: env.IAM !== "0",
    name: "harness-dev",
    port,
    workers: env.WORKERS ? positive("WORKERS", 2) : undefined,
    workerTimeoutMs: env.WORKER_TIMEOUT_MS ? positive("WORKER_TIMEOUT_MS", 15 * 60_000) : undefined,
    sweeperRateMs: env.SWEEPER_RATE_MS ? positive("SWEEPER_RATE_MS", 60_000) : undefined,
    env: passed,
  });
} catch (err) {
  await emulators.stop();
  fail(err instanceof Error ? err.message : String(err));
}

const base = cloud.url;
console.log(`resolute-harness local cloud ready in ${Math.round(performance.now() - started)} ms
  function URL: ${base}
  table: ${cloud.tableName}   bucket: ${cloud.bucketName}
  queue: ${cloud.queueUrl}
  dead-letter queue: ${cloud.deadLetterQueueUrl}
  emulators: ${emulators.env.AWS_ENDPOINT_URL_DYNAMODB} (DynamoDB Local), ${emulators.env.AWS_ENDPOINT_URL_SQS} (fauxqs SQS + S3)
  functions: http, ${cloud.workers.map((w) => w.name).join(", ")}, dlq, sweeper (pids ${[cloud.http.pid, ...cloud.workers.map((w) => w.pid), cloud.dlq.pid, cloud.sweeper.pid].join(" ")})
  IAM: ${cloud.iam ? "each function's calls checked against its role's policy" : "off (IAM=0)"}
The template declares, and the local cloud does not emulate:
${cloud.notEmulated.map((line) => `  - ${line}`).join("\n") || "  (nothing)"}
Try:
  curl -s ${base}/agents/assistant/demo -d '{"kind":"user","body":"what time is it?"}'
  curl -s '${base}/agents/assistant/demo?wait=true' -d '{"kind":"user","body":"hello there"}'
  curl -N ${base}/agents/assistant/demo
  curl -s ${base}/agents/assistant/demo/steer -d '{"body":"answer in French"}'`);

let stopping = false;
const stop = async (signal: NodeJS.Signals) => {
  if (stopping) process.exit(1);
  stopping = true;
  console.log(`${signal}: stopping the local cloud`);
  await cloud.stop().catch((err) => console.error("stop failed:", err));
  await emulators.stop().catch((err) => console.error("emulators stop failed:", err));
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);

function fail(message: string): never {
  console.error(`dev:aws: ${message}`);
  process.exit(1);
}
