/**
 * The soak (`npm run soak`): N sessions × M submissions against the embedded server (`npm start`
 * on a SQLite file) while the server is `kill -9`-ed and started again at random, then every
 * invariant checked from what clients saw and read back (`invariants.ts`). Bounded in count and
 * time, loopback only; stops by itself and prints its figures.
 *
 *   npm run soak                                   # defaults: about three minutes
 *   npm run soak -- --sessions 4 --submissions 5 --kill-every-ms 3000 --seconds 60
 *   npm run soak -- --subagent-rate 0.5 --cancel-rate 0.5   # more subagent families, more cancels
 *   npm run soak -- --cloud                        # the local cloud with the construct's timeouts (cloud-soak.ts; ~10 min); Java for DynamoDB Local
 *   npm run soak -- --cloud --short                # the local cloud with shortened timeouts (~3 min)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { SubmissionStatus } from "../../src/store/submission.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { EmbeddedServer } from "./embedded-server.ts";
import { checkInvariants } from "./invariants.ts";
import { attemptsOf, drainMsOf, formatReport, type KillPhases, type SoakReport } from "./report.ts";
import { driveSessions, familyPhases, freePort, percentiles, readBack, readFamilies, sleep, type Family } from "./session-driver.ts";
import { checkSubagents, subagentFigures } from "./subagent-invariants.ts";
import { seededRandom } from "../../src/store/conformance/random-log.ts";

export interface SoakOptions {
  sessions: number;
  submissionsPerSession: number;
  /** Mean pause between crashes (0: never crash). */
  killEveryMs: number;
  /** Crashes at most (the test's short soak bounds them). */
  maxCrashes?: number;
  /** Hard bound on the whole run. */
  maxSeconds: number;
  leaseMs: number;
  /** Share of submissions followed by a manual compaction. */
  compactionRate: number;
  /** Share of slow replies and research requests cancelled while they run or wait. */
  cancelRate: number;
  /** Share of submissions that delegate to 1–3 parallel subagents (`research …`: `soak-agents.ts`). */
  subagentRate: number;
  /** Deterministic choice of messages and crash timing. */
  seed: number;
  log?: (line: string) => void;
}

export const DEFAULT_SOAK: SoakOptions = {
  sessions: 8,
  submissionsPerSession: 12,
  killEveryMs: 4_000,
  maxSeconds: 180,
  leaseMs: 1_000,
  compactionRate: 0.15,
  cancelRate: 0.3,
  subagentRate: 0.2,
  seed: 1,
};


const UNSETTLED: SubmissionStatus[] = ["queued", "running", "waiting", "terminalizing"];

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const deadline = Date.now() + options.maxSeconds * 1000;
  const random = seededRandom(options.seed);
  const dataDir = mkdtempSync(join(tmpdir(), "harness-soak-"));
  const server = new EmbeddedServer({ port: await freePort(), dataDir, leaseMs: options.leaseMs, entry: "soak" });
  let crashes = 0;
  const families: Family[] = [];
  const settledFamilies = new Set<string>();
  const killPhases: KillPhases = { parentWaiting: 0, parentRunning: 0 };

  await server.start();
  let crashing = options.killEveryMs > 0;
  let serverReady: Promise<void> = Promise.resolve();
  const killer = (async () => {
    while (crashing && Date.now() < deadline && crashes < (options.maxCrashes ?? Infinity)) {
      await sleep(options.killEveryMs * (0.5 + random()));
      if (!crashing) break;
      const phases = await familyPhases(server.url, families, settledFamilies);
      if (phases.waiting) killPhases.parentWaiting++;
      if (phases.running) killPhases.parentRunning++;
      serverReady = (async () => {
        await server.crash();
        crashes++;
        await sleep(50 + random() * 300);
        await server.start();
      })();
      await serverReady;
    }
  })();

  let driven: Awaited<ReturnType<typeof driveSessions>>;
  try {
    driven = await driveSessions({
      url: server.url,
      run: `soak${Date.now().toString(36)}`,
      sessions: options.sessions,
      submissionsPerSession: options.submissionsPerSession,
      random,
      deadline,
      compactionRate: options.compactionRate,
      cancelRate: options.cancelRate,
      subagentRate: options.subagentRate,
      families,
    });
  } catch (err) {
    crashing = false;
    await killer;
    await serverReady;
    log(`server output (tail):\n${server.output.slice(-4000)}`);
    await server.crash();
    throw err;
  }
  crashing = false;
  await killer;
  await serverReady;
  const { sessions } = driven;

  // Read every log back, then stop the server and look at the rows it left.
  const { records, outcomes } = await readBack(server.url, sessions);
  const familyEvidence = await readFamilies(server.url, sessions);
  await server.stop();
  const store = openSqliteStore({ path: join(dataDir, "harness.db") });
  const unsettled = (await Promise.all(UNSETTLED.map((status) => store.listByStatus(status)))).flat();
  const attempts = await attemptsOf(store, sessions);
  const drainMs = await drainMsOf(store, sessions, driven.loadEndedAt);
  await store.close?.();
  const violations = [...checkInvariants({ sessions, unsettled }), ...checkSubagents(sessions, familyEvidence, families.map((f) => f.submissionId))];
  if (violations.length > 0) log(`server output (tail):\n${server.output.slice(-4000)}`);
  rmSync(dataDir, { recursive: true, force: true });

  return {
    violations,
    submissions: sessions.reduce((n, s) => n + s.acknowledged.length, 0),
    crashes,
    steersDelivered: driven.steers,
    compactions: driven.compactions,
    cancels: driven.cancels,
    followUpsDelivered: driven.followUps,
    records,
    outcomes,
    attempts,
    settleMs: percentiles(driven.settleMs),
    subagents: subagentFigures(familyEvidence, sessions),
    killPhases,
    drainMs,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      cloud: { type: "boolean" },
      short: { type: "boolean" },
      sessions: { type: "string" },
      submissions: { type: "string" },
      "kill-every-ms": { type: "string" },
      "throttle-every": { type: "string" },
      "duplicate-rate": { type: "string" },
      "cancel-rate": { type: "string" },
      "subagent-rate": { type: "string" },
      workers: { type: "string" },
      seconds: { type: "string" },
      seed: { type: "string" },
    },
  });
  const num = (v: string | undefined, fallback: number) => (v === undefined ? fallback : Number(v));
  let ok: boolean;
  if (values.cloud) {
    const { DEFAULT_CLOUD_SOAK: d, runCloudSoak } = await import("./cloud-soak.ts");
    const options = {
      ...d,
      sessions: num(values.sessions, d.sessions),
      submissionsPerSession: num(values.submissions, d.submissionsPerSession),
      killEveryMs: num(values["kill-every-ms"], d.killEveryMs),
      throttleEvery: num(values["throttle-every"], d.throttleEvery),
      duplicateRate: num(values["duplicate-rate"], d.duplicateRate),
      cancelRate: num(values["cancel-rate"], d.cancelRate),
      subagentRate: num(values["subagent-rate"], d.subagentRate),
      workers: num(values.workers, d.workers),
      maxSeconds: num(values.seconds, d.maxSeconds),
      short: values.short ?? d.short,
      seed: num(values.seed, d.seed),
      log: (line: string) => console.log(line),
    };
    const timeouts = options.short
      ? "shortened timeouts (worker 20 s, visibility 25 s, lease 2 s, sweep 2 s)"
      : "the construct's timeouts (worker 15 min, visibility 16 min, lease 30 s, sweep 1 min)";
    console.log(`soak (local cloud): ${options.sessions} sessions × ${options.submissionsPerSession} submissions, ${options.workers} workers, a kill -9 every ~${options.killEveryMs} ms (at most ${options.maxCrashes ?? "∞"}; busy workers and containers before their handler, alternately), every ${options.throttleEvery}th DynamoDB call throttled, ${Math.round(options.duplicateRate * 100)}% duplicate doorbells, ${Math.round(options.subagentRate * 100)}% subagent families, ${timeouts}, seed ${options.seed}`);
    const report = await runCloudSoak(options);
    const stalled = report.stalls.filter((k) => k.stallMs !== undefined).map((k) => k.stallMs!);
    console.log(formatReport(report, {
      "duplicate doorbells": String(report.duplicates),
      "DynamoDB calls throttled": String(report.throttled),
      "left in the queues": `${report.leftInQueues} visible, ${report.inFlightAtEnd} in flight (doorbells of containers killed before their handler)`,
      "stall per kill (s)": report.stalls
        .map((k) => `${k.kind === "busy" ? "busy" : "pre-handler"} ${k.stallMs === undefined ? "–" : (k.stallMs / 1000).toFixed(1)}`)
        .join(", "),
      "longest stall": stalled.length ? `${(Math.max(...stalled) / 1000).toFixed(1)} s (target ≤ 90 s)` : "none",
    }));
    ok = report.violations.length === 0;
  } else {
    const options: SoakOptions = {
      ...DEFAULT_SOAK,
      sessions: num(values.sessions, DEFAULT_SOAK.sessions),
      submissionsPerSession: num(values.submissions, DEFAULT_SOAK.submissionsPerSession),
      killEveryMs: num(values["kill-every-ms"], DEFAULT_SOAK.killEveryMs),
      cancelRate: num(values["cancel-rate"], DEFAULT_SOAK.cancelRate),
      subagentRate: num(values["subagent-rate"], DEFAULT_SOAK.subagentRate),
      maxSeconds: num(values.seconds, DEFAULT_SOAK.maxSeconds),
      seed: num(values.seed, DEFAULT_SOAK.seed),
      log: (line) => console.log(line),
    };
    console.log(`soak (embedded): ${options.sessions} sessions × ${options.submissionsPerSession} submissions, kill -9 every ~${options.killEveryMs} ms, ${Math.round(options.subagentRate * 100)}% subagent families, lease ${options.leaseMs} ms, seed ${options.seed}`);
    const report = await runSoak(options);
    console.log(formatReport(report));
    ok = report.violations.length === 0;
  }
  process.exitCode = ok ? 0 : 1;
}
