/**
 * `npm run bench -- lambda`: the serverless shape as its users feel it, on the local cloud
 * (DynamoDB Local, fauxqs, the local function host) running the bundles the `Harness` construct
 * deploys (`bench/lambda-bundles.ts`, `#harness-agents` = `bench/lambda-agents.ts`):
 *
 * - cold starts: each function's init as the local function host measures it (the handler
 *   module's import, what Lambda reports as Init Duration), beside a hello-world bundle's as the
 *   floor and the same bundle under `--enable-source-maps`; bundle sizes; where the init time goes
 *   (a CPU profile, the bundle's code mapped through its source maps)
 * - first token: POST → the first `assistant_text_delta` on the conversation's SSE stream
 *   (opened as the 202 arrives, as the client and the chat page do), through the http function,
 *   beside the same agent on the embedded shape (SQLite, one process, same flush policy)
 * - delta latency: a delta record written by the worker → an SSE client of the http function
 * - the http function's DynamoDB reads per open stream, while a run streams and while the
 *   stream is caught up (a metering proxy in front of DynamoDB Local, for the http function only)
 *
 * `npm run bench -- memory` runs the functions under their configured memory (`memory.ts`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { LocalFunction, LocalFunctionUrl } from "../dev/local-cloud/function-host.ts";
import { type LocalCloud, startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { LAMBDA_ENTRY_FILE, lambdaBuildOptions } from "../src/cdk/lambda-bundling.ts";
import { HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../src/lambda/env.ts";
import { startEmulators } from "../test/support/emulators.ts";
import { s3Request, sqsAction, startCountingProxy } from "./counting-proxy.ts";
import { type DynamoMeterProxy, startDynamoMeterProxy } from "./dynamo-meter-proxy.ts";
import { measured } from "./measured.ts";
import { BenchClient } from "./http-client.ts";
import { profileInit } from "./init-profile.ts";
import { stampsOf, STREAMER, streamMessage } from "./lambda-agents.ts";
import { bundleEnv, bundleLambdas, type LambdaBundle, removeBundles } from "./lambda-bundles.ts";
import { atMost, figure, note } from "./report.ts";
import { median, percentile } from "./stats.ts";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The agents bound to `#harness-agents` in the worker and dlq bundles. */
export const LAMBDA_AGENTS = resolve(ROOT, "bench/lambda-agents.ts");
/** How much `bench lambda` measures: the defaults of `npm run bench -- lambda`; a test runs a short version. */
export interface LambdaBenchOptions {
  /** Containers started per function for the init figures. */
  coldStarts: number;
  /** Sequential replies measured per shape (after `warmRuns`). */
  runs: number;
  warmRuns: number;
  /** Replies whose SQS and S3 requests are counted. */
  countedRuns: number;
  /** The caught-up window of the reads per stream: the model's time to its first token, ms. */
  caughtUpMs: number;
  /** The streaming window of the reads per stream: deltas 25 ms apart. */
  streamingDeltas: number;
  /** Profile each function's init (a CPU profile mapped through the source maps). */
  profile: boolean;
  /** Use the emulators `process.env` points at (a test's) instead of starting a pair. */
  runningEmulators: boolean;
  /** The functions whose cold starts are measured (the hello-world floor always is). */
  coldStartRoles: readonly HarnessFunctionRole[];
  /** Measure the embedded shape beside the local cloud (the first-delta overhead). */
  embedded: boolean;
  /**
   * Measure latency on the cloud whose requests are counted through proxies (a hop each way)
   * instead of a second cloud with nothing in between: one cloud started instead of two.
   */
  oneCloud: boolean;
  /** Worker containers of each local cloud. */
  workers: number;
}

/** The bounded defaults (about 3 minutes on this 2-core machine). */
export const LAMBDA_BENCH_DEFAULTS: LambdaBenchOptions = {
  coldStarts: 7,
  runs: 40,
  warmRuns: 5,
  countedRuns: 10,
  caughtUpMs: 8_000,
  streamingDeltas: 400,
  profile: true,
  runningEmulators: false,
  coldStartRoles: HARNESS_FUNCTION_ROLES,
  embedded: true,
  oneCloud: false,
  workers: 2,
};

/** The streamer's reply in the latency runs: a time to first token, then deltas every 25 ms. */
const REPLY = { deltas: 24, everyMs: 25, afterMs: 300 };

const TARGET = {
  httpInit: atMost(150, " ms"),
  workerInit: atMost(300, " ms"),
  firstDeltaOverhead: atMost(100, " ms"),
  deltaP50: atMost(60, " ms"),
  deltaP99: atMost(250, " ms"),
  caughtUpPoll: atMost(1, " unit"),
};

export async function benchLambda(options: Partial<LambdaBenchOptions> = {}): Promise<void> {
  const o: LambdaBenchOptions = { ...LAMBDA_BENCH_DEFAULTS, ...options };
  const built = await bundleLambdas(LAMBDA_AGENTS);
  const hello = await helloBundle();
  try {
    await coldStarts(built, hello, o);
    if (o.runningEmulators) {
      await latency(built, o);
      return;
    }
    const emulators = await startEmulators();
    const saved = { ...process.env };
    Object.assign(process.env, emulators.env);
    try {
      await latency(built, o);
    } finally {
      await emulators.stop();
      for (const key of Object.keys(emulators.env)) {
        if (saved[key] === undefined) delete process.env[key];
        else process.env[key] = saved[key];
      }
    }
  } finally {
    removeBundles(built);
    rmSync(hello.dir, { recursive: true, force: true });
  }
}

// ---- cold starts ----

interface HelloBundle {
  dir: string;
  file: string;
}

/** A do-nothing handler bundled with the construct's options: the floor of an init. */
async function helloBundle(): Promise<HelloBundle> {
  const dir = mkdtempSync(join(tmpdir(), "harness-bench-hello-"));
  await build(lambdaBuildOptions({ entry: resolve(ROOT, "bench/hello-handler.ts"), agentsEntry: LAMBDA_AGENTS, outdir: dir, sourceMap: true }));
  return { dir, file: join(dir, LAMBDA_ENTRY_FILE) };
}

/** Init durations of fresh containers: wall time (what Lambda reports) and the CPU time of it, ms. */
interface InitTimes {
  wall: number[];
  cpu: number[];
}

/**
 * Init durations of `count` fresh containers of a bundle in the local function host, for each
 * environment in `envs`, started alternately (A, B, A, B, ...) so a busy machine slows them alike.
 */
async function initTimes(role: HarnessFunctionRole | "hello", file: string, envs: Record<string, string>[], count: number): Promise<InitTimes[]> {
  const times: InitTimes[] = envs.map(() => ({ wall: [], cpu: [] }));
  for (let i = 0; i < count; i++) {
    for (const [k, env] of envs.entries()) {
      const options = { name: `${role}-cold-${i}-${k}`, handlerModule: file, agentsModule: LAMBDA_AGENTS, timeoutMs: 60_000, env, log: () => {} };
      const fn = role === "http" ? new LocalFunctionUrl(options) : new LocalFunction(options);
      if (fn instanceof LocalFunctionUrl) await fn.start();
      else await fn.warm();
      times[k]!.wall.push(fn.initMs[0]!);
      times[k]!.cpu.push(fn.initCpuMs[0]!);
      await fn.close();
    }
  }
  return times;
}

/** What the construct set before ADR 0037: Node reads and parses every file's map as it loads. */
const NODE_SOURCE_MAPS = { NODE_OPTIONS: "--enable-source-maps" };

async function coldStarts(built: LambdaBundle[], hello: HelloBundle, o: LambdaBenchOptions): Promise<void> {
  const COLD_STARTS = o.coldStarts;
  console.log(
    `cold starts: init of each function in the local function host (the handler module's import, what Lambda reports as Init Duration), ` +
      `median of ${COLD_STARTS} containers; the construct's bundles (source maps beside them, read when a stack is formatted: ADR 0037), ` +
      `#harness-agents = bench/lambda-agents.ts; beside each, the same bundle with NODE_OPTIONS=--enable-source-maps ` +
      `(the construct's setting before ADR 0037), started alternately:`,
  );
  const env = bundleEnv(built[0]!);
  const [hello1] = await initTimes("hello", hello.file, [env], COLD_STARTS);
  const floor = median(hello1!.wall);
  figure("hello-world bundle init (the floor: Node's ESM loader)", floor, "ms", undefined, 0);
  note(`  CPU ${median(hello1!.cpu).toFixed(0)} ms`);
  for (const b of built.filter((b) => o.coldStartRoles.includes(b.role))) {
    const [deployed, nodeMaps] = await initTimes(b.role, b.file, [bundleEnv(b), { ...bundleEnv(b), ...NODE_SOURCE_MAPS }], COLD_STARTS);
    const init = median(deployed!.wall);
    const target = b.role === "http" ? TARGET.httpInit : b.role === "worker" ? TARGET.workerInit : undefined;
    figure(`${b.role} init`, init, "ms", target, 0);
    note(
      `  CPU ${median(deployed!.cpu).toFixed(0)} ms; ${(init - floor).toFixed(0)} ms over the floor; ` +
        `with --enable-source-maps ${median(nodeMaps!.wall).toFixed(0)} ms (CPU ${median(nodeMaps!.cpu).toFixed(0)} ms)`,
    );
    note(
      `  entry ${(b.bytes / 1e6).toFixed(2)} MB, a cold start loads ${(b.loadBytes / 1e6).toFixed(2)} MB in ${b.loaded.length} files, ` +
        `all chunks ${(b.totalBytes / 1e6).toFixed(2)} MB in ${b.chunks} files`,
    );
    if (o.profile && (b.role === "http" || b.role === "worker")) {
      const profile = profileInit(b.file, bundleEnv(b));
      note(
        `  where it goes (CPU profile of the process, the bundle's code mapped through its source maps, ${profile.totalMs.toFixed(0)} ms busy): ` +
          profile.parts
            .slice(0, 10)
            .map((p) => `${p.name} ${p.ms.toFixed(0)}`)
            .join(", "),
      );
    }
  }
  const providers = /node_modules\/(@anthropic-ai\/sdk|openai|@google\/genai|@mistralai\/|@aws-sdk\/client-bedrock-runtime)/;
  for (const b of built) {
    const inputs = Object.values(b.metafile.outputs).flatMap((o) => Object.keys(o.inputs));
    const sdk = inputs.some((i) => providers.test(i));
    note(`  ${b.role}: provider SDKs in the asset: ${sdk ? "yes (lazy chunks, loaded on a model's first use)" : "none"}`);
  }
}

// ---- first token, delta latency, reads per stream ----

interface ReplySample {
  /** POST sent → first `assistant_text_delta` received, ms. */
  firstDelta: number;
  /**
   * Where the first delta's time went, ms from the POST: the 202, the `user_message` record
   * (written by the worker as it claims), `assistant_message_started` (the model's stream began),
   * the first delta written, the first delta received.
   */
  steps: { answered: number; claimed: number; started: number; written: number; received: number };
  /** Each delta record: its `time` (the worker's stamp as it wrote it) → received, ms. */
  recordToClient: number[];
  /** Each delta fragment: model emit → received, ms (the flush policy's batching included). */
  emitToClient: number[];
}

/** One streamer reply: POST, then the stream as soon as the 202 is in. Undefined if the stream attached late. */
async function reply(client: BenchClient, instance: string, body: string): Promise<ReplySample | undefined> {
  const path = `/agents/${STREAMER}/${instance}`;
  const t0 = performance.now();
  const posted = await client.post(path, { kind: "user", body });
  const answered = performance.now() - t0;
  if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
  const epoch0 = performance.timeOrigin + t0;
  let claimed = Number.NaN;
  let started = Number.NaN;
  let firstAt: number | undefined;
  let firstWritten = Number.POSITIVE_INFINITY;
  const recordToClient: number[] = [];
  const emitToClient: number[] = [];
  const read = await client.stream(path, (f) => {
    if (f.event === "user_message") claimed = Date.parse((JSON.parse(f.data) as { time: string }).time) - epoch0;
    if (f.event === "assistant_message_started") started = Date.parse((JSON.parse(f.data) as { time: string }).time) - epoch0;
    if (f.event === "assistant_text_delta") {
      const record = JSON.parse(f.data) as { time: string; payload: { text: string } };
      const at = performance.timeOrigin + f.at;
      firstAt ??= f.at;
      const written = Date.parse(record.time);
      firstWritten = Math.min(firstWritten, written);
      recordToClient.push(at - written);
      for (const stamp of stampsOf(record.payload.text)) emitToClient.push(at - stamp);
    }
    return f.event === "submission_settled";
  });
  if (!read.done || firstAt === undefined) throw new Error(`stream of ${instance} ended (${read.status}) before its reply settled`);
  // A stream that attached after the first delta was written replays it: not a live figure.
  if (performance.timeOrigin + read.headersAt > firstWritten) return undefined;
  return {
    firstDelta: firstAt - t0,
    steps: { answered, claimed, started, written: firstWritten - epoch0, received: firstAt - t0 },
    recordToClient,
    emitToClient,
  };
}

async function replies(url: string, tag: string, count: number): Promise<{ samples: ReplySample[]; late: number }> {
  const client = new BenchClient(url);
  const samples: ReplySample[] = [];
  let late = 0;
  try {
    for (let i = 0; i < count; i++) {
      const s = await reply(client, `${tag}-${process.pid}-${i}`, streamMessage(REPLY.deltas, REPLY.everyMs, REPLY.afterMs));
      if (s) samples.push(s);
      else late++;
    }
  } finally {
    client.close();
  }
  return { samples, late };
}

/** The embedded shape with the same agents, as a child process; resolves with its URL and a stop. */
async function startEmbedded(): Promise<{ url: string; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "harness-bench-embedded-"));
  const child = spawn(resolve(ROOT, "node_modules/.bin/node"), ["--disable-warning=ExperimentalWarning", resolve(ROOT, "bench/embedded-agents-server.ts")], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise<string>((resolveUrl, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m) resolveUrl(m[1]!);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`embedded server exited (${code}): ${output}`)));
  });
  return {
    url,
    stop: async () => {
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await gone;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function percentiles(xs: number[]): string {
  return `p50 ${percentile(xs, 50).toFixed(0)} ms, p99 ${percentile(xs, 99).toFixed(0)} ms`;
}

async function latency(built: LambdaBundle[], o: LambdaBenchOptions): Promise<void> {
  const { runs: RUNS, warmRuns: WARM_RUNS, countedRuns: COUNTED_RUNS } = o;
  let embeddedRuns: Awaited<ReturnType<typeof replies>> | undefined;
  if (o.embedded) {
    const embedded = await startEmbedded();
    try {
      await replies(embedded.url, "warm", WARM_RUNS);
      embeddedRuns = await replies(embedded.url, "embedded", RUNS);
    } finally {
      await embedded.stop();
    }
  }
  const handlers = Object.fromEntries(built.map((b) => [b.role, b.file])) as Record<HarnessFunctionRole, string>;

  // The latencies, and what a submission costs beyond the model.
  const measureLatency = async (cloud: LocalCloud) => {
    await replies(cloud.url, "warm", WARM_RUNS);
    const before = { cpu: cloud.workers.map((w) => cpuMs(w.pid)), durations: cloud.workers.map((w) => w.durationsMs.length) };
    const lambdaRuns = await replies(cloud.url, "lambda", RUNS);
    const cpu = cloud.workers.reduce((sum, w, i) => sum + cpuMs(w.pid) - before.cpu[i]!, 0);
    const durations = cloud.workers.flatMap((w, i) => w.durationsMs.slice(before.durations[i]));
    printLatency(embeddedRuns, lambdaRuns, RUNS, o.oneCloud, o.workers);
    // What each submission costs beyond the model, for `bench cost`.
    const modelMs = REPLY.afterMs + (REPLY.deltas - 1) * REPLY.everyMs;
    measured.admissionSeconds = median(lambdaRuns.samples.map((x) => x.steps.answered)) / 1000;
    measured.workerHarnessSeconds = Math.max(0, median(durations) - modelMs) / 1000;
    measured.workerCpuMsPerSubmission = cpu / RUNS;
    note(
      `  per submission (for bench cost): worker invocation ${median(durations).toFixed(0)} ms for ${modelMs} ms of model ` +
        `(${(measured.workerHarnessSeconds * 1000).toFixed(0)} ms of harness), worker CPU ${measured.workerCpuMsPerSubmission.toFixed(1)} ms`,
    );
  };
  // On a cloud with nothing between its parts and the emulators (unless one cloud is asked for).
  if (!o.oneCloud) await withCloud(handlers, { workers: o.workers }, measureLatency);

  // Requests counted on their way (a hop each way): the http function's reads, every SQS and S3 request.
  const meter = await startDynamoMeterProxy(process.env.AWS_ENDPOINT_URL_DYNAMODB!);
  const sqs = await startCountingProxy(process.env.AWS_ENDPOINT_URL_SQS!, sqsAction);
  const s3 = await startCountingProxy(process.env.AWS_ENDPOINT_URL_S3!, s3Request);
  try {
    const env = { AWS_ENDPOINT_URL_SQS: sqs.url, AWS_ENDPOINT_URL_S3: s3.url };
    await withCloud(handlers, { env, httpDynamo: meter.url, workers: o.workers }, async (cloud) => {
      if (o.oneCloud) await measureLatency(cloud);
      else await replies(cloud.url, "warm", 2);
      sqs.reset();
      s3.reset();
      const deliveries = cloud.deliveries.length;
      await replies(cloud.url, "count", COUNTED_RUNS);
      const delivered = cloud.deliveries.length - deliveries;
      // The event source's receives that found nothing are the idle cost's (bench aws), not a submission's.
      const sqsRequests = sqs.total() - (sqs.counts.get("ReceiveMessage") ?? 0) + delivered;
      measured.sqsRequestsPerSubmission = Math.round((sqsRequests / COUNTED_RUNS) * 10) / 10;
      measured.s3RequestsPerSubmission = Math.round((s3.total() / COUNTED_RUNS) * 10) / 10;
      note(
        `  SQS requests per submission ${measured.sqsRequestsPerSubmission} (${[...sqs.counts].map(([k, v]) => `${k} ${v}`).join(", ")} ` +
          `for ${COUNTED_RUNS}; ${delivered} receives delivered), S3 requests ${measured.s3RequestsPerSubmission}`,
      );
      await readsPerStream(cloud.url, meter, o);
    });
  } finally {
    await meter.close();
    await sqs.close();
    await s3.close();
  }
}

/** Runs `work` against a fresh local cloud of the bundles; on a failure, prints the cloud's output. */
async function withCloud(
  handlers: Record<HarnessFunctionRole, string>,
  via: { env?: Record<string, string>; httpDynamo?: string; workers: number },
  work: (cloud: LocalCloud) => Promise<void>,
): Promise<void> {
  const logs: string[] = [];
  // The host's own SQS client (the event source) goes through `via.env` too: its requests are billed.
  const saved = { ...process.env };
  Object.assign(process.env, via.env ?? {});
  let cloud: LocalCloud | undefined;
  try {
    cloud = await startLocalCloud({
      assembly: exampleAssembly(LAMBDA_AGENTS).dir,
      agentsModule: LAMBDA_AGENTS,
      handlers,
      name: `bench-lambda-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
      workers: via.workers,
      sweeperRateMs: false,
      functionEnv: via.httpDynamo ? { http: { AWS_ENDPOINT_URL_DYNAMODB: via.httpDynamo } } : {},
      log: (line, source) => void logs.push(`[${source}] ${line}`),
      onError: (err, source) => void logs.push(`[event-source ${source}] ${String(err)}`),
    });
    await work(cloud);
  } catch (err) {
    process.stderr.write(`--- local cloud output (last 40 lines) ---\n${logs.slice(-40).join("\n")}\n`);
    throw err;
  } finally {
    await cloud?.stop();
    for (const key of Object.keys(via.env ?? {})) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
}

/** CPU time (user + system) a live process has used, ms; 0 when it is gone. */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (100/s)
  } catch {
    return 0;
  }
}

function printLatency(
  embedded: { samples: ReplySample[]; late: number } | undefined,
  lambda: { samples: ReplySample[]; late: number },
  RUNS: number,
  proxied: boolean,
  workers: number,
): void {
  console.log(
    `first token and deltas through the http function (local cloud: the construct's bundles, DynamoDB Local, fauxqs, ${workers} worker${workers === 1 ? "" : "s"}` +
      `${proxied ? "; requests counted through proxies, a hop each way" : ""}), ` +
      `${embedded ? "beside the embedded shape (SQLite, one process)" : "the embedded shape not run"}; streamer: ${REPLY.afterMs} ms to ` +
      `first token, then ${REPLY.deltas} deltas ${REPLY.everyMs} ms apart; flush policy 1 KB / 200 ms, a message's first delta at once (ADR 0036); ${RUNS} sequential replies each:`,
  );
  const first = (r: { samples: ReplySample[] }) => r.samples.map((s) => s.firstDelta);
  const lFirst = percentile(first(lambda), 50);
  figure("POST → first text delta, local cloud, p50", lFirst, "ms", undefined, 0);
  if (embedded) {
    const eFirst = percentile(first(embedded), 50);
    note(`  p99 ${percentile(first(lambda), 99).toFixed(0)} ms; embedded p50 ${eFirst.toFixed(0)} ms, p99 ${percentile(first(embedded), 99).toFixed(0)} ms`);
    figure("first-delta overhead over the embedded shape, p50", lFirst - eFirst, "ms", TARGET.firstDeltaOverhead, 0);
  } else note(`  p99 ${percentile(first(lambda), 99).toFixed(0)} ms`);
  const records = lambda.samples.flatMap((s) => s.recordToClient);
  figure(`delta record written (worker) → SSE client, p50 of ${records.length}`, percentile(records, 50), "ms", TARGET.deltaP50, 0);
  figure("delta record written (worker) → SSE client, p99", percentile(records, 99), "ms", TARGET.deltaP99, 0);
  if (embedded) note(`  embedded: ${percentiles(embedded.samples.flatMap((s) => s.recordToClient))}`);
  note(
    `  model emit → SSE client (the 200 ms flush interval included): local cloud ${percentiles(lambda.samples.flatMap((s) => s.emitToClient))}` +
      (embedded ? `, embedded ${percentiles(embedded.samples.flatMap((s) => s.emitToClient))}` : ""),
  );
  const step = (r: { samples: ReplySample[] }, k: keyof ReplySample["steps"]) => median(r.samples.map((x) => x.steps[k]));
  const steps = (r: { samples: ReplySample[] }) =>
    `202 ${step(r, "answered").toFixed(0)}, user_message written (claim) ${step(r, "claimed").toFixed(0)}, ` +
    `model stream started ${step(r, "started").toFixed(0)}, first delta written ${step(r, "written").toFixed(0)}, received ${step(r, "received").toFixed(0)}`;
  note(`  where the first delta's time goes (medians, ms after the POST): local cloud: ${steps(lambda)}${embedded ? `; embedded: ${steps(embedded)}` : ""}`);
  const late = (embedded?.late ?? 0) + lambda.late;
  if (late > 0) note(`  (${late} replies left out: their stream attached after the first delta was written)`);
}

// ---- reads per open stream ----

/** Requests of the http function grouped into wakes of its stream (requests less than 50 ms apart; polls are 100 ms or more apart). */
function wakes(times: number[]): number {
  let n = 0;
  let last = Number.NEGATIVE_INFINITY;
  for (const t of [...times].sort((a, b) => a - b)) {
    if (t - last > 50) n++;
    last = t;
  }
  return n;
}

async function readsPerStream(url: string, meter: DynamoMeterProxy, o: LambdaBenchOptions): Promise<void> {
  const client = new BenchClient(url);
  try {
    console.log("the http function's DynamoDB reads per open stream (one stream at a time, metered in front of DynamoDB Local):");
    // Caught up: the run has started, the model takes `caughtUpMs` to its first token.
    {
      const path = `/agents/${STREAMER}/reads-idle-${process.pid}`;
      await client.post(path, { kind: "user", body: streamMessage(2, 0, o.caughtUpMs) });
      // The window: from 500 ms after the worker's claim wrote the user message (the stream's
      // start and its liveness check are behind it, however late a loaded machine claims) to
      // 300 ms before the first delta (the model's first records are written with it).
      let windowStart = 0;
      let windowEnd = 0;
      meter.startLog();
      await client.stream(path, (f) => {
        if (f.event === "user_message" && windowStart === 0) windowStart = performance.now() + 500;
        if (f.event === "assistant_text_delta" && windowEnd === 0) windowEnd = performance.now() - 300;
        return f.event === "submission_settled";
      });
      const log = meter.stopLog().filter((e) => e.at >= windowStart && e.at <= windowEnd);
      const seconds = (windowEnd - windowStart) / 1000;
      const units = log.reduce((n, e) => n + e.readUnits, 0);
      // A poll is one read of the log (a Query); a liveness check (ADR 0031: every 30 s while
      // caught up) is counted in the read units per second below, not as a poll. Grouping the
      // requests by time instead merged two polls now and then (1.04–1.13 "per poll").
      const logReads = log.filter((e) => e.op === "Query");
      const polls = logReads.length;
      const pollUnits = logReads.reduce((n, e) => n + e.readUnits, 0);
      figure(`read units per caught-up poll (${polls} polls in ${seconds.toFixed(1)} s)`, pollUnits / Math.max(1, polls), "", TARGET.caughtUpPoll, 2);
      note(`  caught up: ${(units / seconds).toFixed(2)} read units/s, ${(polls / seconds).toFixed(2)} polls/s (${opsOf(log)})`);
      measured.viewerReadUnitsPerSecondCaughtUp = Math.round((units / seconds) * 100) / 100;
    }
    // Streaming: `streamingDeltas` deltas 25 ms apart (10 s by default).
    {
      const path = `/agents/${STREAMER}/reads-busy-${process.pid}`;
      await client.post(path, { kind: "user", body: streamMessage(o.streamingDeltas, 25, 0) });
      let first = 0;
      let last = 0;
      meter.startLog();
      await client.stream(path, (f) => {
        if (f.event === "assistant_text_delta") {
          first ||= performance.now();
          last = performance.now();
        }
        return f.event === "submission_settled";
      });
      const log = meter.stopLog().filter((e) => e.at >= first && e.at <= last);
      const seconds = (last - first) / 1000;
      const units = log.reduce((n, e) => n + e.readUnits, 0);
      const polls = wakes(log.map((e) => e.at));
      figure(`read units per second while a run streams (${seconds.toFixed(1)} s)`, units / seconds, "", undefined, 2);
      measured.viewerReadUnitsPerSecondStreaming = Math.round((units / seconds) * 100) / 100;
      note(`  ${(polls / seconds).toFixed(2)} polls/s (${opsOf(log)})`);
    }
  } finally {
    client.close();
  }
}

function opsOf(log: { op: string; readUnits: number }[]): string {
  const by = new Map<string, { n: number; units: number }>();
  for (const e of log) {
    const m = by.get(e.op) ?? { n: 0, units: 0 };
    m.n++;
    m.units += e.readUnits;
    by.set(e.op, m);
  }
  return [...by].map(([op, m]) => `${op} ${m.n} × ${(m.units / m.n).toFixed(1)} unit`).join(", ");
}
