/** The `npm start` server (or the soak's variant of it) as a child process the soak can `kill -9` and start again. */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { FAULTS_ENV } from "../faults/process-faults.ts";

const ROOT = join(import.meta.dirname, "..", "..");
/** Output kept for diagnostics (the tail of the server's log). */
const KEEP_OUTPUT_CHARS = 20_000;

export interface EmbeddedServerOptions {
  port: number;
  dataDir: string;
  leaseMs: number;
  /** Extra environment, e.g. `HARNESS_FAULTS` (the fault seam's preload is loaded when it is set). */
  env?: Record<string, string>;
  /**
   * Which server: `basic` (default), `npm start`'s examples/basic/main.ts; `soak`, the same
   * server with the soak's agents, subagents included (`soak-server.ts`).
   */
  entry?: "basic" | "soak";
}

const ENTRIES = {
  basic: join(ROOT, "examples", "basic", "main.ts"),
  soak: join(ROOT, "dev", "soak", "soak-server.ts"),
} as const;

export class EmbeddedServer {
  readonly url: string;
  readonly #options: EmbeddedServerOptions;
  #proc: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #output = "";
  /** Starts, counted. */
  starts = 0;

  constructor(options: EmbeddedServerOptions) {
    this.#options = options;
    this.url = `http://127.0.0.1:${options.port}`;
  }

  /** The tail of everything the server printed, across restarts. */
  get output(): string {
    return this.#output;
  }

  /** Starts the server on the fixed port and resolves once it listens. */
  async start(): Promise<void> {
    const env = this.#options.env ?? {};
    const preload = env[FAULTS_ENV] ? ["--import", join(ROOT, "dev", "faults", "preload.ts")] : [];
    const proc = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", ...preload, ENTRIES[this.#options.entry ?? "basic"]], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(this.#options.port),
        DATA_DIR: this.#options.dataDir,
        LEASE_MS: String(this.#options.leaseMs),
        MODEL: "",
        LOG_LEVEL: "info",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#proc = proc;
    this.starts++;
    this.#exited = new Promise((resolve) => proc.once("exit", () => resolve()));
    this.#output += `\n--- start ${this.starts}\n`;
    let fresh = "";
    const listening = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        const text = chunk.toString();
        this.#output = (this.#output + text).slice(-KEEP_OUTPUT_CHARS);
        fresh += text;
        if (fresh.includes(`listening on ${this.url}`)) resolve();
      };
      proc.stdout!.on("data", onData);
      proc.stderr!.on("data", onData);
      proc.once("exit", (code, signal) => reject(new Error(`server exited before listening (${code ?? signal})\n${this.#output.slice(-2000)}`)));
    });
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("server did not listen within 30 s")), 30_000).unref());
    await Promise.race([listening, timeout]);
  }

  /** Resolves when the current process exits (e.g. killed by a fault), with its signal. */
  exited(): Promise<NodeJS.Signals | number | null> {
    const proc = this.#proc;
    if (!proc) return Promise.resolve(null);
    if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.signalCode ?? proc.exitCode);
    return new Promise((resolve) => proc.once("exit", (code, signal) => resolve(signal ?? code)));
  }

  /** `kill -9`: no shutdown hook runs, in-flight work is left as a crash leaves it. */
  async crash(): Promise<void> {
    this.#proc?.kill("SIGKILL");
    await this.#exited;
    this.#proc = undefined;
  }

  /** A graceful stop (SIGTERM: in-flight work is released). */
  async stop(): Promise<void> {
    this.#proc?.kill("SIGTERM");
    await this.#exited;
    this.#proc = undefined;
  }
}
