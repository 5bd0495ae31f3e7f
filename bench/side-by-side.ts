/**
 * Two checkouts of the harness, measured alternately in one process (a change against main on a
 * shared, noisy machine): each round starts the quickstart server of checkout A, then of B, each
 * exactly as its own `npm start` runs it (its `bench/quickstart-process.ts`), under the same load.
 *
 *   node --disable-warning=ExperimentalWarning bench/side-by-side.ts <dirA> <dirB> [completions] [rounds]
 *
 * Per run: the server's CPU time per completion (user + system from /proc, 8 clients, POST + SSE
 * until `submission_settled`, after 300 warm-up), its RSS at start and after the load (VmRSS),
 * and text delta emit → SSE client p50 / p99 (a second server with BENCH_STAMP=1, 200
 * sequential replies after 50 warm-up). A checkout needs its node_modules (a symlink will do).
 */
import { resolve } from "node:path";
import { loadavg } from "node:os";
import { percentile } from "./stats.ts";

const [dirA, dirB, completionsArg, roundsArg] = process.argv.slice(2);
if (!dirA || !dirB) {
  console.error("usage: bench/side-by-side.ts <dirA> <dirB> [completions=1500] [rounds=2]");
  process.exit(2);
}
const COMPLETIONS = Number(completionsArg ?? 1_500);
const ROUNDS = Number(roundsArg ?? 2);
const CLIENTS = 8;
const WARMUP = 300;
const STAMPED = 200;

interface QuickstartModule {
  startQuickstart(options?: { env?: Record<string, string> }): Promise<{
    url: string;
    rssMiB(): number;
    cpuMs(): number;
    waitSettled(n: number, timeoutMs?: number): Promise<void>;
    stop(): Promise<void>;
  }>;
}
interface ClientModule {
  BenchClient: new (url: string) => {
    post(path: string, body: unknown): Promise<{ status: number; body: string }>;
    stream(path: string, onFrame: (f: { event?: string; data: string; at: number }) => boolean): Promise<{ done: boolean; headersAt: number }>;
    close(): void;
  };
  runConcurrently(count: number, concurrency: number, worker: (i: number) => Promise<unknown>): Promise<number>;
}

let seq = 0;

async function measure(dir: string): Promise<string> {
  const { startQuickstart } = (await import(resolve(dir, "bench/quickstart-process.ts"))) as QuickstartModule;
  const { BenchClient, runConcurrently } = (await import(resolve(dir, "bench/http-client.ts"))) as ClientModule;

  const server = await startQuickstart();
  const client = new BenchClient(server.url);
  const completion = async () => {
    const path = `/agents/assistant/sbs-${process.pid}-${++seq}`;
    const posted = await client.post(path, { kind: "user", body: "hello there" });
    if (posted.status !== 202) throw new Error(`POST answered ${posted.status}: ${posted.body}`);
    const read = await client.stream(path, (f) => f.event === "submission_settled");
    if (!read.done) throw new Error(`stream of ${path} ended before submission_settled`);
  };
  let line: string;
  try {
    const rssStart = server.rssMiB();
    await runConcurrently(WARMUP, CLIENTS, completion);
    const cpu0 = server.cpuMs();
    await runConcurrently(COMPLETIONS, CLIENTS, completion);
    const cpu = (server.cpuMs() - cpu0) / COMPLETIONS;
    await server.waitSettled(WARMUP + COMPLETIONS);
    line = `CPU ${cpu.toFixed(2)} ms/completion, RSS ${rssStart.toFixed(1)} → ${server.rssMiB().toFixed(1)} MiB after ${WARMUP + COMPLETIONS}`;
  } finally {
    client.close();
    await server.stop();
  }

  const stamped = await startQuickstart({ env: { BENCH_STAMP: "1" } });
  const sClient = new BenchClient(stamped.url);
  try {
    const latencies: number[] = [];
    for (let i = 0; i < 50 + STAMPED; i++) {
      const path = `/agents/assistant/sbs-d-${process.pid}-${++seq}`;
      const posted = await sClient.post(path, { kind: "user", body: "hello there" });
      if (posted.status !== 202) throw new Error(`POST answered ${posted.status}`);
      let first: number | undefined;
      let text = "";
      const read = await sClient.stream(path, (f) => {
        if (f.event === "assistant_text_delta") {
          first ??= f.at;
          text += (JSON.parse(f.data) as { payload: { text: string } }).payload.text;
        }
        return f.event === "submission_settled";
      });
      const stamp = Number(/^@(\d+(?:\.\d+)?);/.exec(text)?.[1]);
      // A stream attached after the first delta was emitted measures nothing.
      if (i < 50 || first === undefined || !Number.isFinite(stamp) || performance.timeOrigin + read.headersAt > stamp) continue;
      latencies.push(performance.timeOrigin + first - stamp);
    }
    line += `; delta → SSE p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms (${latencies.length})`;
  } finally {
    sClient.close();
    await stamped.stop();
  }
  return line;
}

console.log(`A = ${dirA}\nB = ${dirB}\n${COMPLETIONS} completions × ${ROUNDS} rounds, alternating`);
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, dir] of [["A", dirA], ["B", dirB]] as const) {
    const load = loadavg()[0]!.toFixed(1);
    console.log(`round ${round} ${name} (load ${load}): ${await measure(dir)}`);
  }
}
