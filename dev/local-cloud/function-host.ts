/**
 * Hosts local Lambda functions in child processes (`function-child.ts`), one process per
 * execution environment, so a test can kill one mid-invocation the way a crash, an out-of-memory
 * kill or a timeout ends a real one. `LocalFunction` runs invocations one at a time (as one
 * Lambda container does) and enforces the function timeout by killing its process;
 * `LocalFunctionUrl` serves a streaming handler as a function URL and restarts when killed.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ChildMessage, ChildSpec } from "./function-protocol.ts";
import { checkFunctionEnvironment, checkInvokePayload, checkInvokeResult } from "./lambda-limits.ts";

// `.ts` from the sources, `.js` if ever compiled (the local cloud is not part of the package).
const OWN_EXTENSION = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
const CHILD_ENTRY = fileURLToPath(new URL(`./function-child${OWN_EXTENSION}`, import.meta.url));

let compiledChild: string | undefined;

/**
 * The container's own code as JavaScript (built once per host process with esbuild), for a
 * handler that is JavaScript already (a bundle, as deployed): the process then never loads Node's
 * TypeScript stripper, which would add ~30 MB to its resident size and to its start, as no
 * Lambda container has. A TypeScript handler keeps the TypeScript child: it needs the stripper
 * anyway, and the fault seam (`HARNESS_FAULTS`) lives in a module it must share with the handler.
 */
function childEntryFor(handlerModule: string): string {
  if (handlerModule.endsWith(".ts") || OWN_EXTENSION !== ".ts") return CHILD_ENTRY;
  if (compiledChild === undefined) {
    const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    const outdir = mkdtempSync(join(tmpdir(), "harness-local-child-"));
    esbuild.buildSync({
      entryPoints: [CHILD_ENTRY, fileURLToPath(new URL("./agents-alias-hook.ts", import.meta.url))],
      outdir,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      platform: "node",
      target: "node22",
      format: "esm",
      packages: "external",
      logLevel: "error",
    });
    compiledChild = join(outdir, "function-child.mjs");
  }
  return compiledChild;
}

/** Where a function's output lines go (`source` is the function name). */
export type LogSink = (line: string, source: string) => void;

export interface LocalFunctionOptions {
  /** Function (and log source) name, e.g. `worker-1`. */
  name: string;
  /** Absolute path of the handler module. */
  handlerModule: string;
  /** Its export Lambda calls; default `handler`. */
  handlerExport?: string;
  /** Absolute path of the module bound to `#harness-agents` (a `.ts` handler only: a bundle has it bound). */
  agentsModule?: string;
  /** Function timeout. */
  timeoutMs: number;
  /** The function's whole environment (nothing else is inherited, as on Lambda). */
  env: Record<string, string>;
  /**
   * The function's memory size as a hard limit: V8's heap sized as Lambda's Node bootstrap sizes
   * it (new space a tenth of the memory, old space the rest), and the container killed (SIGKILL,
   * as Lambda's out-of-memory kill) as soon as its resident size exceeds the size (sampled every
   * 20 ms). Resident size is what Lambda limits; an rlimit cannot stand in for it (`ulimit -v`
   * counts V8's address-space reservations, `--data` every thread's stack, far above what is
   * resident) and no cgroup is ours to make. Default: unlimited (the context says 1024 MB).
   */
  memoryMb?: number;
  /**
   * A function URL's streamed-response maximum (`function-url-limits.ts`); default Lambda's
   * 200 MB. A test lowers it to reach the limit cheaply.
   */
  streamedResponseMaxBytes?: number;
  log?: LogSink;
}

/** How often a container with a memory size has its resident size checked. */
const RSS_CHECK_MS = 20;

/**
 * Node options of a container, as Lambda's Node bootstrap passes them: `--expose-gc` and
 * `--max-http-header-size 81920` always, and with `memoryMb` of memory the heap sized from it.
 * Kept faithful so that what they break breaks here first: Node refuses `--expose-gc` and the
 * heap flags in a worker thread's options, which once answered every result schema with a 500
 * (issue 33; src/drive/worker-exec-argv.ts).
 */
function lambdaNodeOptions(memoryMb: number | undefined): string[] {
  const always = ["--expose-gc", "--max-http-header-size", "81920"];
  if (memoryMb === undefined) return always;
  const newSpace = Math.floor(memoryMb / 10);
  return [...always, `--max-semi-space-size=${Math.max(1, Math.floor(newSpace / 2))}`, `--max-old-space-size=${memoryMb - newSpace}`];
}

/** Resident set size (VmRSS) of a live process, MiB; undefined when it is gone. */
export function rssMiB(pid: number | undefined): number | undefined {
  return statusMiB(pid, "VmRSS");
}

/** Peak resident set size (VmHWM) of a live process, MiB; undefined when it is gone. */
export function peakRssMiB(pid: number | undefined): number | undefined {
  return statusMiB(pid, "VmHWM");
}

function statusMiB(pid: number | undefined, field: string): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** An invocation failed: the handler threw, timed out, or its process died. */
export class FunctionError extends Error {
  readonly kind: "error" | "timeout" | "crash";
  constructor(kind: "error" | "timeout" | "crash", message: string) {
    super(message);
    this.name = "FunctionError";
    this.kind = kind;
  }
}

function spawnChild(spec: ChildSpec, options: LocalFunctionOptions): ChildProcess {
  const child = fork(childEntryFor(spec.handlerModule), [JSON.stringify(spec)], {
    execArgv: ["--disable-warning=ExperimentalWarning", ...lambdaNodeOptions(options.memoryMb)],
    env: {
      ...options.env,
      AWS_LAMBDA_FUNCTION_NAME: options.env.AWS_LAMBDA_FUNCTION_NAME ?? spec.functionName,
      ...(options.memoryMb !== undefined ? { AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memoryMb) } : {}),
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  const log = options.log ?? ((line, source) => process.stderr.write(`[${source}] ${line}\n`));
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on("line", (line) => log(line, spec.functionName));
  }
  const memoryMb = options.memoryMb;
  if (memoryMb !== undefined) {
    const watch = setInterval(() => {
      const rss = rssMiB(child.pid);
      if (rss === undefined || rss <= memoryMb) return;
      clearInterval(watch);
      log(`Runtime exited: memory size ${memoryMb} MB exceeded (resident ${rss.toFixed(1)} MiB), killed`, spec.functionName);
      child.kill("SIGKILL");
    }, RSS_CHECK_MS);
    watch.unref();
    child.once("exit", () => clearInterval(watch));
  }
  return child;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Sends `signal` to a live container; false when there is none. */
function killChild(child: ChildProcess | undefined, signal: NodeJS.Signals): boolean {
  if (!child || exited(child)) return false;
  return child.kill(signal);
}

/** SIGKILLs a live container and waits until it is gone. */
async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || exited(child)) return;
  const gone = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await gone;
}

/** A function invoked with events (worker, dlq, sweeper), one container at a time. */
export class LocalFunction {
  readonly name: string;
  readonly #options: LocalFunctionOptions;
  #child: ChildProcess | undefined;
  #ready: Promise<ChildProcess> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 1;
  #busy = false;
  #closed = false;
  /** Containers started so far (each is a cold start). */
  coldStarts = 0;
  /** Invocations started so far. */
  invocations = 0;
  /** The init duration of each container that finished its init, in order (ms). */
  readonly initMs: number[] = [];
  /** The CPU time of each of those inits, in order (ms). */
  readonly initCpuMs: number[] = [];
  /** The duration of each invocation that returned (its result or its error), in order (ms). */
  readonly durationsMs: number[] = [];
  /** Containers that exited by themselves (a crash, out of memory), not by `kill` or `close`. */
  crashes = 0;
  #killed = false;

  constructor(options: LocalFunctionOptions) {
    // Lambda refuses to create a function whose environment is over 4 KB.
    checkFunctionEnvironment(options.name, options.env);
    this.name = options.name;
    this.#options = options;
  }

  /** Peak resident size of the current container (VmHWM), MiB; undefined when none is up. */
  peakRssMiB(): number | undefined {
    return peakRssMiB(this.pid);
  }

  /** True while an invocation runs. */
  get busy(): boolean {
    return this.#busy;
  }

  /** The current container's process id, if one is up. */
  get pid(): number | undefined {
    return this.#child && !exited(this.#child) ? this.#child.pid : undefined;
  }

  /** Starts a container now (a warm-up), so the first invocation pays no cold start. */
  async warm(): Promise<void> {
    await this.#container();
  }

  /** Invokes the handler with `event`; resolves with its result, rejects with {@link FunctionError}. */
  invoke(event: unknown): Promise<unknown> {
    const run = this.#queue.then(() => this.#invokeNow(event));
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Kills the current container (default SIGKILL: nothing gets to clean up). */
  kill(signal: NodeJS.Signals = "SIGKILL"): boolean {
    const killed = killChild(this.#child, signal);
    if (killed) this.#killed = true;
    return killed;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await stopChild(this.#child);
  }

  async #invokeNow(event: unknown): Promise<unknown> {
    if (this.#closed) throw new FunctionError("crash", `${this.name} is closed`);
    // Lambda's Invoke refuses an event over 6 MB before any container sees it.
    checkInvokePayload(JSON.stringify(event ?? null));
    const child = await this.#container();
    const id = this.#nextId++;
    const deadline = Date.now() + this.#options.timeoutMs;
    const started = performance.now();
    this.#busy = true;
    this.invocations++;
    try {
      return await new Promise<unknown>((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          child.kill("SIGKILL");
          reject(new FunctionError("timeout", `Task timed out after ${(this.#options.timeoutMs / 1000).toFixed(2)} seconds`));
        }, this.#options.timeoutMs);
        const onMessage = (message: ChildMessage) => {
          if ((message.type !== "result" && message.type !== "error") || message.id !== id) return;
          cleanup();
          this.durationsMs.push(performance.now() - started);
          if (message.type === "result") {
            // A result over the buffered response limit reaches the caller as Lambda's error.
            try {
              checkInvokeResult(message.result);
            } catch (err) {
              reject(err);
              return;
            }
            resolve(message.result);
          }
          else reject(new FunctionError("error", `${message.error.name}: ${message.error.message}`));
        };
        const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
          cleanup();
          reject(new FunctionError("crash", `Runtime exited with ${signal ? `signal: ${signal}` : `error: exit status ${code}`}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          child.off("message", onMessage);
          child.off("exit", onExit);
        };
        child.on("message", onMessage);
        child.once("exit", onExit);
        // A container that died just now answers EPIPE here; its exit rejects the invocation.
        child.send({ type: "invoke", id, event, deadline }, (err) => void err);
      });
    } finally {
      this.#busy = false;
    }
  }

  #container(): Promise<ChildProcess> {
    if (this.#child && !exited(this.#child) && this.#ready) return this.#ready;
    const spec: ChildSpec = {
      functionName: this.name,
      handlerModule: this.#options.handlerModule,
      handlerExport: this.#options.handlerExport,
      agentsModule: this.#options.agentsModule ?? "",
      mode: "invoke",
      timeoutMs: this.#options.timeoutMs,
      memoryMb: this.#options.memoryMb,
    };
    const child = spawnChild(spec, this.#options);
    this.#child = child;
    this.#killed = false;
    this.coldStarts++;
    let initialized = false;
    // A container that dies after its init is replaced at once, so the next invocation finds one
    // warming up (one whose init fails is not retried until the next invocation).
    child.once("exit", () => {
      if (!this.#closed && !this.#killed && this.#child === child) this.crashes++;
      if (initialized && !this.#closed && this.#child === child) void this.#container().catch(() => {});
    });
    this.#ready = new Promise<ChildProcess>((resolve, reject) => {
      const onMessage = (message: ChildMessage) => {
        if (message.type !== "ready") return;
        initialized = true;
        this.initMs.push(message.initMs);
        this.initCpuMs.push(message.initCpuMs);
        child.off("exit", onExit);
        child.off("message", onMessage);
        resolve(child);
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        child.off("message", onMessage);
        reject(new FunctionError("crash", `${this.name}: init failed (exit ${code ?? signal})`));
      };
      child.on("message", onMessage);
      child.once("exit", onExit);
    });
    this.#ready.catch(() => {});
    return this.#ready;
  }
}

export interface LocalFunctionUrlOptions extends LocalFunctionOptions {
  /** Default 0 (a free port; kept across restarts). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
}

/** A streaming handler served as a function URL by one container, restarted when it dies. */
export class LocalFunctionUrl {
  readonly name: string;
  readonly #options: LocalFunctionUrlOptions;
  #child: ChildProcess | undefined;
  #port: number;
  #url = "";
  #closed = false;
  #killed = false;
  /** Containers started so far. */
  coldStarts = 0;
  /** The init duration of each container that finished its init, in order (ms). */
  readonly initMs: number[] = [];
  /** The CPU time of each of those inits, in order (ms). */
  readonly initCpuMs: number[] = [];
  /** Containers that exited by themselves (a crash, out of memory), not by `kill` or `close`. */
  crashes = 0;

  constructor(options: LocalFunctionUrlOptions) {
    checkFunctionEnvironment(options.name, options.env);
    this.name = options.name;
    this.#options = options;
    this.#port = options.port ?? 0;
  }

  /** Peak resident size of the current container (VmHWM), MiB; undefined when none is up. */
  peakRssMiB(): number | undefined {
    return peakRssMiB(this.pid);
  }

  /** `http://host:port` of the URL (stable across restarts). */
  get url(): string {
    return this.#url;
  }

  get pid(): number | undefined {
    return this.#child && !exited(this.#child) ? this.#child.pid : undefined;
  }

  /** Starts the container and resolves once it listens. */
  async start(): Promise<string> {
    const spec: ChildSpec = {
      functionName: this.name,
      handlerModule: this.#options.handlerModule,
      handlerExport: this.#options.handlerExport,
      agentsModule: this.#options.agentsModule ?? "",
      mode: "url",
      timeoutMs: this.#options.timeoutMs,
      port: this.#port,
      host: this.#options.host ?? "127.0.0.1",
      memoryMb: this.#options.memoryMb,
      streamedResponseMaxBytes: this.#options.streamedResponseMaxBytes,
    };
    const child = spawnChild(spec, this.#options);
    this.#child = child;
    this.#killed = false;
    this.coldStarts++;
    this.#url = await new Promise<string>((resolve, reject) => {
      const onMessage = (message: ChildMessage) => {
        if (message.type !== "listening") return;
        child.off("exit", onExit);
        this.initMs.push(message.initMs);
        this.initCpuMs.push(message.initCpuMs);
        resolve(message.url);
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
        reject(new FunctionError("crash", `${this.name}: init failed (exit ${code ?? signal})`));
      child.on("message", onMessage);
      child.once("exit", onExit);
    });
    this.#port = Number(new URL(this.#url).port);
    child.once("exit", () => {
      if (!this.#closed && !this.#killed) this.crashes++;
      if (!this.#closed) void this.start().catch((err) => (this.#options.log ?? console.error)(String(err), this.name));
    });
    return this.#url;
  }

  /** Kills the container (it is restarted on the same port). */
  kill(signal: NodeJS.Signals = "SIGKILL"): boolean {
    const killed = killChild(this.#child, signal);
    if (killed) this.#killed = true;
    return killed;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await stopChild(this.#child);
  }
}
