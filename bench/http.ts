/**
 * The quickstart over real HTTP: `npm start`'s own server (SQLite store in a temporary DATA_DIR,
 * the keyless local model echoing a short reply) in a child process, and the load client in this
 * process, on the same machine, over 127.0.0.1. Every loop is bounded by a count.
 *
 * - completions/s: 8 clients, each POSTing to a new instance and reading its SSE stream until
 *   `submission_settled` (then dropping the connection)
 * - admissions/s and admission latency (POST → 202) with 1, 8 and 32 clients
 * - sequential POST → settled, with `?wait=true` (the target) and with POST + SSE
 * - model emits a text delta → an SSE client receives it: a second server with BENCH_STAMP=1,
 *   where the local model waits 20 ms (a time to first token, so the stream is attached) and
 *   starts its reply with its emit time
 * - the server's RSS after the runs
 *
 * Where a target is missed, the bench says where the time (or memory) goes: a `--cpu-prof`
 * re-run for throughput and latency, a GC-then-measure probe for RSS.
 */
import { existsSync, rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { BenchClient, runConcurrently } from "./http-client.ts";
import { cpuProfileSummary, newProfileDir } from "./cpu-profile.ts";
import { startQuickstart } from "./quickstart-process.ts";
import { atLeast, atMost, figure, note } from "./report.ts";
import { median, percentile } from "./stats.ts";

const WARMUP = 300;
const COMPLETIONS = 2_000;
const CLIENTS = 8;
const ADMISSIONS: [clients: number, count: number][] = [
  [1, 300],
  [8, 1_000],
  [32, 1_000],
];
const SEQUENTIAL = 200;
const STAMPED = 200;
const BODY = "hello there";

const TARGET = {
  completions: atLeast(270, "/s"),
  settledP50: atMost(5, " ms"),
  deltaP50: atMost(5, " ms"),
  deltaP99: atMost(50, " ms"),
  rss: atMost(120, " MiB"),
};

let instanceSeq = 0;
const newInstance = (prefix: string) => `${prefix}-${process.pid}-${++instanceSeq}`;
const path = (instance: string) => `/agents/assistant/${instance}`;
const fixed = (v: number) => v.toFixed(2);

export async function benchHttp(): Promise<void> {
  console.log(
    `machine: ${cpus().length} cores (shared), load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; server: npm start (SQLite, keyless model); client in this process`,
  );
  const missed = new Set<string>();
  let settledOnDisk: number[] | undefined;
  const server = await startQuickstart();
  const client = new BenchClient(server.url);
  let admitted = 0;
  try {
    note(`server pid ${server.pid} at ${server.url}, data in ${server.dataDir}, RSS at start ${server.rssMiB().toFixed(1)} MiB`);
    await runConcurrently(WARMUP, CLIENTS, () => completion(client, "w"));
    admitted += WARMUP;

    // Throughput.
    const cpu0 = server.cpuMs();
    const clientCpu0 = process.cpuUsage();
    let records = 0;
    const wall = await runConcurrently(COMPLETIONS, CLIENTS, async () => {
      const streamed = await completion(client, "c");
      records += streamed;
    });
    admitted += COMPLETIONS;
    const serverCpu = (server.cpuMs() - cpu0) / COMPLETIONS;
    const clientUsage = process.cpuUsage(clientCpu0);
    const clientCpu = (clientUsage.user + clientUsage.system) / 1000 / COMPLETIONS;
    const rate = (COMPLETIONS / wall) * 1000;
    if (!figure(`completions/s (${CLIENTS} clients, ${COMPLETIONS} × POST + SSE until submission_settled)`, rate, "/s", TARGET.completions)) {
      missed.add("completions");
    }
    note(
      `  CPU per completion: server ${serverCpu.toFixed(2)} ms (≈ ${(1000 / serverCpu).toFixed(0)}/s with a core to itself), ` +
        `load client ${clientCpu.toFixed(2)} ms; ${(records / COMPLETIONS).toFixed(1)} records streamed per completion`,
    );

    // Admission alone (each admitted message still runs: the server does both).
    for (const [clients, count] of ADMISSIONS) {
      await server.waitSettled(admitted);
      const latencies: number[] = [];
      const admitCpu0 = server.cpuMs();
      const ms = await runConcurrently(count, clients, async () => {
        const t0 = performance.now();
        const posted = await client.post(path(newInstance("a")), { kind: "user", body: BODY });
        latencies.push(performance.now() - t0);
        if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
      });
      admitted += count;
      figure(`admissions/s (${clients} client${clients > 1 ? "s" : ""}, ${count} × POST → 202)`, (count / ms) * 1000, "/s");
      // Server CPU over the window (it also runs what it admits meanwhile), beside the wall-time rate.
      const admitCpu = (server.cpuMs() - admitCpu0) / count;
      note(
        `  admission latency p50 ${fixed(percentile(latencies, 50))} ms, p99 ${fixed(percentile(latencies, 99))} ms; ` +
          `server CPU ${admitCpu.toFixed(2)} ms per POST over the window`,
      );
    }
    await server.waitSettled(admitted);

    // One at a time.
    const waitCpu0 = server.cpuMs();
    const waits = await sequential(async () => {
      const answer = await client.post(`${path(newInstance("s"))}?wait=true`, { kind: "user", body: BODY });
      if (answer.status !== 200) throw new Error(`POST ?wait=true answered ${answer.status}: ${answer.body}`);
    });
    admitted += SEQUENTIAL;
    if (!figure(`POST ?wait=true → 200 settled, sequential, p50 of ${SEQUENTIAL}`, percentile(waits, 50), "ms", TARGET.settledP50, 2)) {
      missed.add("settled");
      settledOnDisk = waits;
    }
    note(`  p99 ${fixed(percentile(waits, 99))} ms; server CPU ${((server.cpuMs() - waitCpu0) / SEQUENTIAL).toFixed(2)} ms per submission`);
    const streamed = await sequential(() => completion(client, "s"));
    admitted += SEQUENTIAL;
    figure(`POST → 202, then SSE until submission_settled, sequential, p50 of ${SEQUENTIAL}`, percentile(streamed, 50), "ms", undefined, 2);
    note(`  p99 ${fixed(percentile(streamed, 99))} ms`);

    await server.waitSettled(admitted);
    if (!figure(`server RSS after ${admitted} submissions (VmRSS)`, server.rssMiB(), "MiB", TARGET.rss)) missed.add("rss");
  } finally {
    client.close();
    await server.stop();
  }

  if (!(await deltaLatency())) missed.add("delta");

  if (settledOnDisk) await settledWithoutFsync(settledOnDisk);
  if (missed.has("completions") || missed.has("settled") || missed.has("delta")) await profile();
  if (missed.has("rss")) await explainRss();
}

/** One completion: POST to a new instance, then read its stream until `submission_settled`. */
async function completion(client: BenchClient, prefix: string): Promise<number> {
  const instance = newInstance(prefix);
  const posted = await client.post(path(instance), { kind: "user", body: BODY });
  if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
  let records = 0;
  const read = await client.stream(path(instance), (f) => {
    records++;
    return f.event === "submission_settled";
  });
  if (!read.done) throw new Error(`stream of ${instance} ended (${read.status}) before submission_settled`);
  return records;
}

async function sequential(run: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  return times;
}

interface StampedSample {
  /** Model stamp → first delta at the client, ms. */
  latency: number;
  /** Server record times, first delta → `submission_settled`, ms (1 ms resolution). */
  serverSpan: number;
  /** Client arrivals, first delta → `submission_settled`, ms. */
  clientSpan: number;
}

/** Emit → receive of a text delta; true when the targets are met. */
async function deltaLatency(): Promise<boolean> {
  let met = true;
  const server = await startQuickstart({ env: { BENCH_STAMP: "1" } });
  const client = new BenchClient(server.url);
  try {
    await stampedRuns(client, 50, 1);
    const seq = await stampedRuns(client, STAMPED, 1);
    const lat = seq.samples.map((s) => s.latency);
    met = figure(`text delta emit → SSE client, sequential, p50 of ${lat.length}`, percentile(lat, 50), "ms", TARGET.deltaP50, 2) && met;
    met = figure(`text delta emit → SSE client, sequential, p99`, percentile(lat, 99), "ms", TARGET.deltaP99, 2) && met;
    if (seq.late > 0) note(`  (${seq.late} replies left out: the stream attached after the delta was emitted)`);
    const loaded = await stampedRuns(client, STAMPED * 2, CLIENTS);
    const ll = loaded.samples.map((s) => s.latency);
    note(`  with ${CLIENTS} clients at once (${ll.length} replies): p50 ${fixed(percentile(ll, 50))} ms, p99 ${fixed(percentile(ll, 99))} ms`);
    if (!met) {
      const serverSpan = median(seq.samples.map((s) => s.serverSpan));
      const clientSpan = median(seq.samples.map((s) => s.clientSpan));
      note(
        `  where it goes: the server stamps a reply's records from the first delta to submission_settled over ` +
          `${serverSpan.toFixed(0)} ms (median); the client receives them within ${fixed(clientSpan)} ms — ` +
          (clientSpan < serverSpan / 2 ? "one burst at the end of the run" : "as they are written"),
      );
    }
  } finally {
    client.close();
    await server.stop();
  }

  // The same with the model yielding between deltas, as a network-fed provider does.
  const paced = await startQuickstart({ env: { BENCH_STAMP: "1", BENCH_STAMP_GAP_MS: "1" } });
  const pacedClient = new BenchClient(paced.url);
  try {
    await stampedRuns(pacedClient, 30, 1);
    const seq = await stampedRuns(pacedClient, STAMPED, 1);
    const lat = seq.samples.map((s) => s.latency);
    note(
      `  model yielding 1 ms between deltas (as a provider read from the network): p50 ${fixed(percentile(lat, 50))} ms, ` +
        `p99 ${fixed(percentile(lat, 99))} ms (${lat.length} replies)`,
    );
  } finally {
    pacedClient.close();
    await paced.stop();
  }
  return met;
}

async function stampedRuns(client: BenchClient, count: number, clients: number): Promise<{ samples: StampedSample[]; late: number }> {
  const samples: StampedSample[] = [];
  let late = 0;
  await runConcurrently(count, clients, async () => {
    const s = await stampedSample(client);
    if (s === undefined) late++;
    else samples.push(s);
  });
  return { samples, late };
}

/** One stamped reply; undefined if the stream attached after the first delta was emitted. */
async function stampedSample(client: BenchClient): Promise<StampedSample | undefined> {
  const instance = newInstance("d");
  const posted = await client.post(path(instance), { kind: "user", body: BODY });
  if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
  let first: { at: number; time: string } | undefined;
  let settled: { at: number; time: string } | undefined;
  let text = "";
  const read = await client.stream(path(instance), (f) => {
    if (f.event === "assistant_text_delta") {
      const record = JSON.parse(f.data) as { time: string; payload: { text: string } };
      first ??= { at: f.at, time: record.time };
      text += record.payload.text;
    } else if (f.event === "submission_settled") {
      settled = { at: f.at, time: (JSON.parse(f.data) as { time: string }).time };
    }
    return settled !== undefined;
  });
  const m = /^@(\d+(?:\.\d+)?);/.exec(text);
  if (!m || !first || !settled) throw new Error(`no stamped reply in ${JSON.stringify(text)} (is BENCH_STAMP read?)`);
  const stamp = Number(m[1]);
  const origin = performance.timeOrigin;
  if (origin + read.headersAt > stamp) return undefined;
  return {
    latency: origin + first.at - stamp,
    serverSpan: Date.parse(settled.time) - Date.parse(first.time),
    clientSpan: settled.at - first.at,
  };
}

/** The sequential `?wait=true` again with DATA_DIR on tmpfs, where SQLite's fsync costs nothing. */
async function settledWithoutFsync(onDisk: number[]): Promise<void> {
  if (!existsSync("/dev/shm")) return;
  const server = await startQuickstart({ dataRoot: "/dev/shm" });
  const client = new BenchClient(server.url);
  try {
    await runConcurrently(WARMUP, CLIENTS, () => completion(client, "w"));
    const waits = await sequential(async () => {
      const answer = await client.post(`${path(newInstance("s"))}?wait=true`, { kind: "user", body: BODY });
      if (answer.status !== 200) throw new Error(`POST ?wait=true answered ${answer.status}: ${answer.body}`);
    });
    const p99 = percentile(waits, 99);
    note(
      `  the same with DATA_DIR on tmpfs (/dev/shm: fsync is free): p50 ${fixed(percentile(waits, 50))} ms, p99 ${fixed(p99)} ms` +
        (p99 < 0.7 * percentile(onDisk, 99)
          ? " — the tail on disk is SQLite's WAL checkpoint fsync (synchronous=NORMAL syncs only there), on the event loop"
          : " — the disk is not what makes the tail"),
    );
  } finally {
    client.close();
    await server.stop();
  }
}

/**
 * Re-runs the completions load against a `--cpu-prof` server and prints where its CPU went (the
 * server from source, so the profile names `src/<dir>`, not the one bundled file).
 */
async function profile(): Promise<void> {
  const dir = newProfileDir();
  const server = await startQuickstart({ nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${dir}`], fromSource: true });
  const client = new BenchClient(server.url);
  try {
    await runConcurrently(1_000, CLIENTS, () => completion(client, "p"));
  } finally {
    client.close();
    await server.stop();
  }
  note(`where the server's time goes (--cpu-prof, 1000 completions, ${CLIENTS} clients):`);
  for (const line of cpuProfileSummary(dir)) note(`  ${line}`);
  rmSync(dir, { recursive: true, force: true });
}

/** Re-runs the load against a server with the memory probe and splits its RSS. */
async function explainRss(): Promise<void> {
  const server = await startQuickstart({ nodeFlags: ["--expose-gc", "--import", "./bench/memory-probe.mjs"] });
  const client = new BenchClient(server.url);
  try {
    const atStart = await server.memoryAfterGc();
    await runConcurrently(COMPLETIONS, CLIENTS, () => completion(client, "m"));
    await server.waitSettled(COMPLETIONS);
    const rss = server.rssMiB();
    const after = await server.memoryAfterGc();
    const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
    note(
      `where the RSS goes (same load, probe preloaded): RSS ${rss.toFixed(1)} MiB before a forced GC; after it ` +
        `live JS heap ${mib(after.heapUsed)} MiB of ${mib(after.heapTotal)} MiB reserved, external ${mib(after.external)} MiB, ` +
        `RSS ${mib(after.rss)} MiB; at start the RSS was ${mib(atStart.rss)} MiB with a ${mib(atStart.heapUsed)} MiB heap ` +
        `(Node 22 + the modules)`,
    );
  } finally {
    client.close();
    await server.stop();
  }
}

