/**
 * The soak (`npm run soak`): N sessions × M submissions against the embedded server (`npm start`
 * on a SQLite file) while the server is `kill -9`-ed and started again at random, then every
 * invariant checked from what clients saw and read back (`invariants.ts`). Bounded in count and
 * time, loopback only; stops by itself and prints its figures.
 *
 *   npm run soak                                   # defaults: about three minutes
 *   npm run soak -- --sessions 4 --submissions 5 --kill-every-ms 3000 --seconds 60
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createClient } from "../../src/client/client.ts";
import type { ConversationRecord } from "../../src/conversation/records.ts";
import type { SubmissionStatus } from "../../src/ports/submission.ts";
import { openSqliteStore } from "../../src/stores/sqlite/index.ts";
import { EmbeddedServer } from "./embedded-server.ts";
import { checkInvariants, type SessionEvidence } from "./invariants.ts";

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
  seed: 1,
};

export interface SoakReport {
  violations: string[];
  submissions: number;
  crashes: number;
  steersDelivered: number;
  followUpsDelivered: number;
  records: number;
  /** Settlements by outcome: `succeeded`, or the failed error code. */
  outcomes: Record<string, number>;
  /** Attempts charged, by submission, from the store. */
  attempts: { total: number; max: number };
  /** Milliseconds from first POST to the settled outcome, per submission. */
  settleMs: { p50: number; p99: number; max: number };
  seconds: number;
}

const UNSETTLED: SubmissionStatus[] = ["queued", "running", "waiting", "terminalizing"];

/** What one submission asks of the keyless model: a short reply, a tool call, or a slow reply to steer. */
const MESSAGES = [
  (n: string) => `hello ${n}`,
  (n: string) => `what time is it? ${n}`,
  (n: string) => `slow ${n}`,
] as const;

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const deadline = Date.now() + options.maxSeconds * 1000;
  const random = mulberry32(options.seed);
  const dataDir = mkdtempSync(join(tmpdir(), "harness-soak-"));
  const server = new EmbeddedServer({ port: await freePort(), dataDir, leaseMs: options.leaseMs });
  const client = createClient({ baseUrl: server.url });
  const run = `soak${Date.now().toString(36)}`;
  let crashes = 0;
  let steers = 0;
  let followUps = 0;
  const settleMs: number[] = [];

  await server.start();
  let crashing = options.killEveryMs > 0;
  let serverReady: Promise<void> = Promise.resolve();
  const killer = (async () => {
    while (crashing && Date.now() < deadline && crashes < (options.maxCrashes ?? Infinity)) {
      await sleep(options.killEveryMs * (0.5 + random()));
      if (!crashing) break;
      serverReady = (async () => {
        await server.crash();
        crashes++;
        await sleep(50 + random() * 300);
        await server.start();
      })();
      await serverReady;
    }
  })();

  /** POSTs until the server answers (it may be down for a moment); refusals are returned. */
  async function post(path: string, body: unknown): Promise<Response> {
    for (;;) {
      if (Date.now() > deadline) throw new Error(`soak deadline passed while posting to ${path}`);
      try {
        const res = await fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
        if (res.status < 500) return res;
        await res.body?.cancel();
      } catch {
        // down (killed): try again shortly
      }
      await sleep(100);
    }
  }

  const sessions: SessionEvidence[] = [];
  const workers = Array.from({ length: options.sessions }, async (_, s) => {
    const instance = `${run}-${s}`;
    const path = `/agents/assistant/${instance}`;
    const acknowledged: string[] = [];
    const live: ConversationRecord[][] = [];
    const evidence: SessionEvidence = { key: `assistant/${instance}/default`, acknowledged, log: [], live };
    sessions.push(evidence);
    // Half the sessions have a live reader for the whole run.
    const reader = s % 2 === 0 ? follow(instance, live) : undefined;
    for (let m = 0; m < options.submissionsPerSession; m++) {
      const dispatchId = `${instance}-${m}`;
      const body = { kind: "user", body: MESSAGES[Math.floor(random() * MESSAGES.length)]!(`#${m}`), dispatchId };
      const t0 = performance.now();
      const res = await post(path, body);
      if (res.status !== 202) throw new Error(`${dispatchId}: admission answered ${res.status} ${await res.text()}`);
      const { submissionId } = (await res.json()) as { submissionId: string };
      acknowledged.push(submissionId);
      if (body.body.startsWith("slow") && random() < 0.6) {
        // Steer or follow up the slow reply while it runs (409 when it already finished: fine).
        await sleep(random() * 400);
        const route = random() < 0.5 ? "steer" : "followup";
        const injected = await post(`${path}/${route}`, { body: `and keep it short (${m})` });
        if (injected.status === 200) route === "steer" ? steers++ : followUps++;
        else await injected.body?.cancel();
      }
      // Most submissions are awaited; some are left queued behind the next one (head-of-line).
      if (random() < 0.7 || m === options.submissionsPerSession - 1) {
        for (;;) {
          const waited = await post(`${path}?wait=true`, body);
          await waited.body?.cancel();
          if (waited.status === 200) break;
        }
        settleMs.push(performance.now() - t0);
      }
    }
    await reader?.stop();
  });

  /** A live reader: tails the stream, reconnecting from the last id it saw when the server dies. */
  function follow(instance: string, into: ConversationRecord[][]) {
    const seen: ConversationRecord[] = [];
    into.push(seen);
    const stop = new AbortController();
    const done = (async () => {
      while (!stop.signal.aborted) {
        try {
          for await (const record of client.stream("assistant", instance, { after: seen.at(-1)?.id ?? "", signal: stop.signal })) seen.push(record);
          await sleep(200, stop.signal); // idle: look again
        } catch {
          if (stop.signal.aborted) return;
          await sleep(200); // down, or not created yet
        }
      }
    })();
    return {
      stop: async () => {
        stop.abort();
        await done.catch(() => {});
      },
    };
  }

  try {
    await Promise.all(workers);
  } finally {
    crashing = false;
    await killer;
    await serverReady;
  }

  // Read every log back, then stop the server and look at the rows it left.
  let records = 0;
  const outcomes: Record<string, number> = {};
  for (const session of sessions) {
    const instance = session.key.split("/")[1]!;
    const all: ConversationRecord[] = [];
    for await (const record of client.stream("assistant", instance, {})) all.push(record);
    session.log = all;
    records += all.length;
    for (const r of all) {
      if (r.kind !== "submission_settled") continue;
      const outcome = r.payload.status === "succeeded" ? "succeeded" : (r.payload.errorCode ?? "failed");
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
  }
  await server.stop();
  const store = openSqliteStore({ path: join(dataDir, "harness.db") });
  const unsettled = (await Promise.all(UNSETTLED.map((status) => store.listByStatus(status)))).flat();
  let attemptsTotal = 0;
  let attemptsMax = 0;
  for (const session of sessions) {
    for (const id of session.acknowledged) {
      const sub = await store.getSubmission(id);
      attemptsTotal += sub.attemptCount;
      attemptsMax = Math.max(attemptsMax, sub.attemptCount);
    }
  }
  await store.close?.();
  const violations = checkInvariants({ sessions, unsettled });
  if (violations.length > 0) log(`server output (tail):\n${server.output.slice(-4000)}`);
  rmSync(dataDir, { recursive: true, force: true });

  settleMs.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(settleMs[Math.min(settleMs.length - 1, Math.floor(p * settleMs.length))] ?? 0);
  return {
    violations,
    submissions: sessions.reduce((n, s) => n + s.acknowledged.length, 0),
    crashes,
    steersDelivered: steers,
    followUpsDelivered: followUps,
    records,
    outcomes,
    attempts: { total: attemptsTotal, max: attemptsMax },
    settleMs: { p50: pct(0.5), p99: pct(0.99), max: Math.round(settleMs.at(-1) ?? 0) },
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** A small seeded PRNG, so a soak's message mix and crash timing can be replayed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      sessions: { type: "string" },
      submissions: { type: "string" },
      "kill-every-ms": { type: "string" },
      seconds: { type: "string" },
      seed: { type: "string" },
    },
  });
  const num = (v: string | undefined, fallback: number) => (v === undefined ? fallback : Number(v));
  const options: SoakOptions = {
    ...DEFAULT_SOAK,
    sessions: num(values.sessions, DEFAULT_SOAK.sessions),
    submissionsPerSession: num(values.submissions, DEFAULT_SOAK.submissionsPerSession),
    killEveryMs: num(values["kill-every-ms"], DEFAULT_SOAK.killEveryMs),
    maxSeconds: num(values.seconds, DEFAULT_SOAK.maxSeconds),
    seed: num(values.seed, DEFAULT_SOAK.seed),
    log: (line) => console.log(line),
  };
  console.log(`soak (embedded): ${options.sessions} sessions × ${options.submissionsPerSession} submissions, kill -9 every ~${options.killEveryMs} ms, lease ${options.leaseMs} ms, seed ${options.seed}`);
  const report = await runSoak(options);
  console.log(`submissions settled:      ${report.submissions}
outcomes:                 ${Object.entries(report.outcomes).map(([k, n]) => `${n} ${k}`).join(", ")}
crashes (kill -9):        ${report.crashes}
steers / follow-ups:      ${report.steersDelivered} / ${report.followUpsDelivered} delivered
records read back:        ${report.records}
attempts charged:         ${report.attempts.total} (max ${report.attempts.max} for one submission)
POST → settled (ms):      (awaited ones) p50 ${report.settleMs.p50}, p99 ${report.settleMs.p99}, max ${report.settleMs.max}
duration:                 ${report.seconds} s
invariants:               ${report.violations.length === 0 ? "all hold" : `${report.violations.length} VIOLATED`}`);
  for (const v of report.violations) console.log(`  ✗ ${v}`);
  process.exitCode = report.violations.length === 0 ? 0 : 1;
}
