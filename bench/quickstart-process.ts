/**
 * The quickstart server as `npm start` runs it, in a child process: package.json's `prestart`
 * (the bundle), then Node 22 from node_modules/.bin with the flags and script of its `start`, a
 * free PORT and a temporary DATA_DIR. The banner gives the URL and the pid; stdout is read line by line so
 * a benchmark can count the `settled` lines the example logs (its backlog has drained when they
 * match the admissions).
 */
import { execSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

export interface QuickstartOptions {
  /** Extra environment (e.g. BENCH_STAMP=1). */
  env?: Record<string, string>;
  /** Node flags before the script (e.g. `--cpu-prof`). */
  nodeFlags?: string[];
  /** Where the temporary DATA_DIR is made; default the OS temp directory. */
  dataRoot?: string;
  /**
   * Run `examples/basic/main.ts` (with the `start` flags) instead of the bundle `npm start` runs:
   * a CPU profile then names the source files (`src/<dir>`) rather than one bundled file.
   */
  fromSource?: boolean;
  /** Run `prestart` first (default true); false starts the bundle already built. */
  build?: boolean;
  /** Another built script in place of the `start` script's (e.g. a copy of the bundle elsewhere). */
  script?: string;
}

export interface Quickstart {
  readonly url: string;
  /** The server's pid, from its banner. */
  readonly pid: number;
  readonly dataDir: string;
  /** `settled` lines logged so far. */
  settledCount(): number;
  /** Resolves once `settledCount() >= n` (rejects after `timeoutMs`). */
  waitSettled(n: number, timeoutMs?: number): Promise<void>;
  /** VmRSS of the server process, in MiB. */
  rssMiB(): number;
  /** CPU time (user + system) the server has used so far, in ms. */
  cpuMs(): number;
  /**
   * With `bench/memory-probe.mjs` preloaded: a full GC in the server, then its
   * `process.memoryUsage()` (bytes).
   */
  memoryAfterGc(): Promise<NodeJS.MemoryUsage>;
  /** SIGTERM (graceful close), then removes the data directory unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

/** Starts the quickstart and resolves once its banner is printed. */
export async function startQuickstart(options: QuickstartOptions = {}): Promise<Quickstart> {
  const dataDir = mkdtempSync(join(options.dataRoot ?? tmpdir(), "harness-bench-"));
  const node = resolve(ROOT, "node_modules/.bin/node");
  const built = startArgs({ build: !options.fromSource && (options.build ?? true) });
  const args = options.fromSource
    ? [...built.slice(0, -1), "examples/basic/main.ts"]
    : options.script
      ? [...built.slice(0, -1), options.script]
      : built;
  const child = spawn(node, [...(options.nodeFlags ?? []), ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let settled = 0;
  let waiters: { n: number; resolve: () => void }[] = [];
  let stderr = "";
  let memoryWaiter: ((usage: NodeJS.MemoryUsage) => void) | undefined;
  let partial = "";
  let banner = "";
  const bannerSeen = new Promise<void>((resolveBanner, reject) => {
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      const text = partial + chunk;
      const cut = text.lastIndexOf("\n");
      partial = cut < 0 ? text : text.slice(cut + 1);
      if (cut < 0) return;
      const complete = text.slice(0, cut);
      if (!banner && /listening on/.test(complete)) {
        banner = complete;
        if (/pid: \d+/.test(banner)) resolveBanner();
      } else if (banner && !/pid: \d+/.test(banner)) {
        banner += `\n${complete}`;
        if (/pid: \d+/.test(banner)) resolveBanner();
      }
      // Count the example's `… settled <session> …` lines.
      let at = complete.indexOf(" settled ");
      while (at >= 0) {
        settled++;
        at = complete.indexOf(" settled ", at + 9);
      }
      if (waiters.length > 0) {
        const ready = waiters.filter((w) => settled >= w.n);
        waiters = waiters.filter((w) => settled < w.n);
        for (const w of ready) w.resolve();
      }
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      const probe = /^BENCH_MEMORY (.*)$/m.exec(chunk);
      if (probe && memoryWaiter) memoryWaiter(JSON.parse(probe[1]!) as NodeJS.MemoryUsage);
      else stderr = (stderr + chunk).slice(-10_000);
    });
    child.once("exit", (code, signal) => reject(new Error(`quickstart exited before its banner (${code ?? signal}): ${stderr}`)));
  });
  await bannerSeen;
  const url = /listening on (http:\/\/\S+)/.exec(banner)![1]!;
  const pid = Number(/pid: (\d+)/.exec(banner)![1]);
  const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once("exit", () => r())));

  return {
    url,
    pid,
    dataDir,
    settledCount: () => settled,
    waitSettled(n, timeoutMs = 60_000) {
      if (settled >= n) return Promise.resolve();
      return new Promise((resolveWait, reject) => {
        const timer = setTimeout(() => reject(new Error(`quickstart: ${settled}/${n} settled after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolveWait();
          },
        });
      });
    },
    rssMiB: () => vmRssMiB(pid),
    cpuMs: () => cpuMs(pid),
    memoryAfterGc() {
      return new Promise((resolveUsage, reject) => {
        const timer = setTimeout(() => reject(new Error("no BENCH_MEMORY line (is bench/memory-probe.mjs preloaded?)")), 10_000);
        memoryWaiter = (usage) => {
          clearTimeout(timer);
          memoryWaiter = undefined;
          resolveUsage(usage);
        };
        process.kill(pid, "SIGUSR2");
      });
    },
    async stop({ keepData = false } = {}) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(force);
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs package.json's `prestart` (as npm would, with node_modules/.bin on the PATH) unless `build`
 * is false, then returns the arguments after `node` in its `start` script (its flags, then the
 * script, last).
 */
function startArgs({ build = true } = {}): string[] {
  const pkg = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as { scripts: { start: string; prestart?: string } };
  if (build && pkg.scripts.prestart) {
    const path = `${resolve(ROOT, "node_modules/.bin")}:${process.env.PATH ?? ""}`;
    execSync(pkg.scripts.prestart, { cwd: ROOT, env: { ...process.env, PATH: path }, stdio: "inherit" });
  }
  const [command, ...args] = pkg.scripts.start.trim().split(/\s+/);
  if (command !== "node") throw new Error(`package.json start is not "node …": ${pkg.scripts.start}`);
  return args;
}

/** User + system CPU time of `pid` from /proc/<pid>/stat, in ms (clock ticks of 10 ms, Linux's USER_HZ). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** VmRSS of `pid` from /proc, in MiB. */
export function vmRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  if (!Number.isFinite(kb)) throw new Error(`no VmRSS for pid ${pid}`);
  return kb / 1024;
}
