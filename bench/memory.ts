/**
 * `npm run bench -- memory`: every function of the local cloud runs the construct's bundles
 * under its configured memory size as a hard limit (the local function host's `memoryMb`: V8's
 * heap sized as Lambda's Node bootstrap sizes it, the container killed when its resident size exceeds it)
 * through the soak's mix (`dev/soak/session-driver.ts`: replies, tool calls, slow replies with
 * steers and follow-ups, subagents, compactions, cancels, live readers) with large payloads
 * beside it: 200 KB inputs echoed back (a 200 KB streamed reply) and 2 MB tool outputs, each
 * with a viewer streaming it through the http function. Prints each function's peak RSS (VmHWM)
 * against its size, and any container that died.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import type { LocalFunction, LocalFunctionUrl } from "../dev/local-cloud/function-host.ts";
import { driveSessions } from "../dev/soak/session-driver.ts";
import { DEFAULT_MEMORY_MB } from "../src/cdk/memory-sizes.ts";
import type { HarnessFunctionRole } from "../src/lambda/env.ts";
import { seededRandom } from "../src/store/conformance/random-log.ts";
import { startEmulators } from "../test/support/emulators.ts";
import { BenchClient } from "./http-client.ts";
import { DUMPER } from "./lambda-agents.ts";
import { measured } from "./measured.ts";
import { bundleLambdas, removeBundles } from "./lambda-bundles.ts";
import { atLeast, atMost, figure, note } from "./report.ts";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const AGENTS = resolve(ROOT, "bench/lambda-agents.ts");
/** How much `bench memory` runs: the defaults of `npm run bench -- memory`; a test runs a short version. */
export interface MemoryBenchOptions {
  /** The soak's mix: sessions × submissions. */
  sessions: number;
  submissions: number;
  /** Large payloads, each run this many times (one after another per kind, both kinds at once). */
  largeRuns: number;
  /** Use the emulators `process.env` points at (a test's) instead of starting a pair. */
  runningEmulators: boolean;
  /** Worker containers of the local cloud. */
  workers: number;
}

/** The bounded defaults (about 2 minutes on this 2-core machine). */
export const MEMORY_BENCH_DEFAULTS: MemoryBenchOptions = { sessions: 4, submissions: 6, largeRuns: 3, runningEmulators: false, workers: 2 };
const INPUT_BYTES = 200 * 1024;
const TOOL_OUTPUT_BYTES = 2 * 1024 * 1024;
/** The free share of the size a function must keep at its peak to hold with headroom. */
const HEADROOM = 0.25;

/**
 * Runs the mix with every function limited to `sizes` (default: the construct's defaults);
 * resolves with each function's peak RSS (MiB) and the containers that died.
 */
export async function benchMemory(
  sizes: Partial<Record<HarnessFunctionRole, number>> = DEFAULT_MEMORY_MB,
  options: Partial<MemoryBenchOptions> = {},
): Promise<void> {
  const o = { ...MEMORY_BENCH_DEFAULTS, ...options };
  const { sessions: SESSIONS, submissions: SUBMISSIONS, largeRuns: LARGE_RUNS } = o;
  const limits: Record<HarnessFunctionRole, number> = {
    http: sizes.http ?? DEFAULT_MEMORY_MB.http,
    worker: sizes.worker ?? DEFAULT_MEMORY_MB.worker,
    dlq: sizes.dlq ?? DEFAULT_MEMORY_MB.dlq,
    sweeper: sizes.sweeper ?? DEFAULT_MEMORY_MB.sweeper,
  };
  console.log(
    `memory: the construct's bundles in the local cloud, each function under its memory size as a hard limit ` +
      `(http ${limits.http}, worker ${limits.worker}, dlq ${limits.dlq}, sweeper ${limits.sweeper} MB: V8 heap as Lambda sizes it, ` +
      `killed above it), through the soak's mix (${SESSIONS} sessions × ${SUBMISSIONS} submissions) with ${LARGE_RUNS} × a ` +
      `${INPUT_BYTES / 1024} KB input echoed back and ${LARGE_RUNS} × a ${TOOL_OUTPUT_BYTES / 1048576} MB tool output beside it, each streamed to a viewer:`,
  );
  const built = await bundleLambdas(AGENTS);
  const emulators = o.runningEmulators ? undefined : await startEmulators();
  const saved = { ...process.env };
  Object.assign(process.env, emulators?.env ?? {});
  const logs: string[] = [];
  try {
    const handlers = Object.fromEntries(built.map((b) => [b.role, b.file])) as Record<HarnessFunctionRole, string>;
    const cloud = await startLocalCloud({
      assembly: exampleAssembly(AGENTS).dir,
      agentsModule: AGENTS,
      handlers,
      name: `bench-memory-${process.pid}`,
      workers: o.workers,
      sweeperRateMs: 2_000,
      memoryMb: limits,
      env: { HARNESS_STALE_QUEUED_MS: "5000" },
      log: (line, source) => void logs.push(`[${source}] ${line}`),
      onError: (err, source) => void logs.push(`[event-source ${source}] ${String(err)}`),
    });
    const functions: [string, HarnessFunctionRole, LocalFunction | LocalFunctionUrl][] = [
      ["http", "http", cloud.http],
      ...cloud.workers.map((w): [string, HarnessFunctionRole, LocalFunction] => [w.name, "worker", w]),
      ["dlq", "dlq", cloud.dlq],
      ["sweeper", "sweeper", cloud.sweeper],
    ];
    // Peak RSS of every container, sampled: a container that dies and is replaced keeps its peak.
    const peaks = new Map<string, number>();
    const sample = () => {
      for (const [name, , fn] of functions) peaks.set(name, Math.max(peaks.get(name) ?? 0, fn.peakRssMiB() ?? 0));
    };
    const sampler = setInterval(sample, 200);
    /** Work that did not finish (a size that does not hold). */
    const lost: string[] = [];
    const started = performance.now();
    try {
      await Promise.all([
        SESSIONS === 0 ? undefined : driveSessions({
          url: cloud.url,
          run: `mem${Date.now().toString(36)}`,
          sessions: SESSIONS,
          submissionsPerSession: SUBMISSIONS,
          random: seededRandom(7),
          deadline: Date.now() + 240_000,
          compactionRate: 0.15,
          cancelRate: 0.3,
          subagentRate: 0.25,
        }),
        large(cloud.url, "assistant", LARGE_RUNS, (i) => `${"echo this back, please. ".repeat(INPUT_BYTES / 24).slice(0, INPUT_BYTES - 8)} #${i}`, lost),
        large(cloud.url, DUMPER, LARGE_RUNS, () => `dump ${TOOL_OUTPUT_BYTES}`, lost),
      ]).catch((err: unknown) => void lost.push(`the mix: ${err instanceof Error ? err.message.slice(0, 300) : String(err)}`));
      // The sweeper and the dlq drain tick on their schedule during the run; once more at the end.
      await cloud.sweep();
      await cloud.drainDeadLetters();
      sample();
    } finally {
      clearInterval(sampler);
    }
    const seconds = (performance.now() - started) / 1000;
    for (const [name, role, fn] of functions) {
      const peak = peaks.get(name) ?? 0;
      const limit = limits[role];
      figure(`${name} peak RSS under ${limit} MB`, peak, "MiB", undefined, 1);
      figure(`  ${name} free at its peak`, (1 - peak / limit) * 100, "%", atLeast(HEADROOM * 100, " %"), 0);
      if (fn.crashes > 0) {
        note(`  ${name}: ${fn.crashes} container(s) died (out of memory or a crash); started ${fn.coldStarts}`);
        const gcs = logs.filter((l) => l.startsWith(`[${name}]`) && /Mark-Compact|out of memory|Scavenge/.test(l)).slice(-2);
        for (const line of gcs) note(`    ${line.slice(0, 220)}`);
      }
    }
    measured.workerPeakRssMiB = Math.max(...functions.filter(([, role]) => role === "worker").map(([name]) => peaks.get(name) ?? 0));
    figure("work lost (submissions not followed to their end, the mix failing)", lost.length, "", atMost(0, ""), 0);
    for (const l of lost) note(`  ${l}`);
    note(`  the mix took ${seconds.toFixed(0)} s; every container started: ${functions.map(([n, , f]) => `${n} ${f.coldStarts}`).join(", ")}`);
    await cloud.stop();
  } catch (err) {
    process.stderr.write(`--- local cloud output (last 40 lines) ---\n${logs.slice(-40).join("\n")}\n`);
    throw err;
  } finally {
    await emulators?.stop();
    for (const key of Object.keys(emulators?.env ?? {})) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
    removeBundles(built);
  }
}

/**
 * `runs` submissions of `body(i)` to one instance of `agent`, each read to its settlement by
 * a viewer (who reads again from the last record it got when a container dies under it).
 */
async function large(url: string, agent: string, runs: number, body: (i: number) => string, lost: string[]): Promise<void> {
  const client = new BenchClient(url);
  try {
    for (let i = 0; i < runs; i++) {
      // A conversation each: one large payload in it, not a conversation growing by several.
      const path = `/agents/${agent}/mem-large-${process.pid}-${i}`;
      const posted = await client.post(path, { kind: "user", body: body(i) });
      if (posted.status !== 202) throw new Error(`POST ${path} answered ${posted.status}: ${posted.body.slice(0, 300)}`);
      const { submissionId } = JSON.parse(posted.body) as { submissionId: string };
      let last = "";
      for (let attempt = 0; ; attempt++) {
        if (attempt === 20) {
          lost.push(`${path}: its viewer could not follow it to its settlement`);
          break;
        }
        let settled = false;
        try {
          await client.stream(`${path}${last ? `?lastEventId=${last}` : ""}`, (f) => {
            if (f.id) last = f.id;
            settled = f.event === "submission_settled" && (JSON.parse(f.data) as { submissionId: string }).submissionId === submissionId;
            return settled;
          });
        } catch {
          // the http container died mid-stream: it is restarted; read on from the last id
        }
        if (settled) break;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    client.close();
  }
}
