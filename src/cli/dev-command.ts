import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { extname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { parseCorsOrigins } from "../http/cors-origins.ts";
import { ServerListenFailed } from "../server/listen-failed.ts";
import { checkPortFree } from "../server/port-check.ts";
import type { DevServerSettings, WatchMessage } from "./dev-server.ts";
import { FileWatcher } from "./file-watcher.ts";
import { EXIT, usageError, type CliIo } from "./cli-io.ts";

/** The Node the harness needs: its model libraries (pi) require 22.19. */
export const NODE_FLOOR = [22, 19] as const;

/** The server `harness dev` runs, beside this module (`.ts` in the sources, `.js` in dist/). */
const DEV_SERVER = fileURLToPath(new URL(`./dev-server${extname(import.meta.url)}`, import.meta.url));

interface DevOptions {
  port?: string;
  host?: string;
  dataDir?: string;
  envFile?: string;
  /** Every `--cors` given, each one origin or a comma-separated list. */
  cors: string[];
}

/**
 * `harness dev [agents]`: the user's agents module on an embedded server with a SQLite store, the
 * chat page at `/`, the `.env` file loaded, and a restart whenever the module, a file of the
 * user's it imports, or the `.env` file changes (a restart releases in-flight runs, which the new
 * server resumes). Resolves with the exit status once the server has stopped.
 */
export function registerDevCommand(program: Command, io: CliIo, done: (status: number) => void): void {
  program
    .command("dev")
    .description("run your agents module locally: HTTP API and chat page on one port, SQLite store, .env loaded, reloads when you save")
    .argument("[agents]", "the module exporting `agents` (as the CDK construct's agentsEntry)", "agents.ts")
    .option("-p, --port <port>", "port to listen on (env: PORT; default 8484; 0 picks a free one)")
    .option("--host <host>", "address to listen on (env: HOST; default 127.0.0.1)")
    .option("--data-dir <dir>", "where the SQLite store lives (env: DATA_DIR; default ./harness-data)")
    .option("--env-file <file>", "environment file to load (default .env, when there is one)")
    .option(
      "--cors <origin>",
      "let pages of this origin (scheme://host[:port], e.g. http://localhost:5173) call the API from a browser; repeatable or comma-separated (env: CORS_ORIGINS)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .action(async (agents: string, opts: DevOptions) => {
      done(await runDev(agents, opts, io));
    });
}

async function runDev(agents: string, opts: DevOptions, io: CliIo): Promise<number> {
  const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
  if (major < NODE_FLOOR[0] || (major === NODE_FLOOR[0] && minor < NODE_FLOOR[1])) {
    io.stderr.write(`harness dev: needs Node ${NODE_FLOOR.join(".")} or newer (this is ${process.versions.node}): install a newer Node 22 or 24\n`);
    return EXIT.usage;
  }
  const agentsModule = resolve(agents);
  if (!existsSync(agentsModule) || !statSync(agentsModule).isFile()) {
    throw usageError("agents", `no agents module at ${agents}: pass the file that exports \`agents\` (harness dev path/to/agents.ts), or run \`harness init\` for a starting point`);
  }
  const rawPort = opts.port ?? io.env.PORT ?? "8484";
  let port = rawPort === "" ? 8484 : Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw usageError("port", `${opts.port !== undefined ? "--port" : "PORT"} expects a port number (0 picks a free one), got ${JSON.stringify(rawPort)}`);
  }
  const hostname = opts.host ?? (io.env.HOST || "127.0.0.1");
  const leaseMs = Number(io.env.LEASE_MS || 10_000);
  if (!Number.isFinite(leaseMs) || leaseMs < 300) throw usageError("lease", `LEASE_MS must be at least 300, got ${io.env.LEASE_MS}`);
  const corsOrigins = corsFlagOrigins(opts.cors);
  const envFile = resolve(opts.envFile ?? ".env");
  if (opts.envFile !== undefined && !existsSync(envFile)) throw usageError("env-file", `--env-file ${opts.envFile}: no such file`);

  // A busy port is said now, in one line; port 0 is resolved now, so every reload keeps the port.
  try {
    port = port === 0 ? await freePort(hostname) : (await checkPortFree(port, hostname), port);
  } catch (err) {
    if (!(err instanceof ServerListenFailed)) throw err;
    io.stderr.write(
      `harness dev: ${err.message}: stop it, or start with PORT=<another port> or --port <another port> (0 picks a free one)\n`,
    );
    return 1;
  }

  const settings: DevServerSettings = {
    agentsModule,
    port,
    hostname,
    dataDir: resolve(opts.dataDir ?? (io.env.DATA_DIR || "./harness-data")),
    envFile: existsSync(envFile) ? envFile : undefined,
    leaseMs,
    debug: io.env.LOG_LEVEL === "debug",
    corsOrigins,
  };
  return await superviseDevServer(settings, envFile, io);
}

/**
 * Runs the server, and runs it again when a file it loaded (reported over IPC) or the `.env` file
 * changes: the old one is stopped with SIGTERM (it releases its in-flight runs, which the new one
 * resumes) before the new one starts. A server that fails (a syntax error in the module) waits for
 * the next change. Resolves with the exit status once stopped (Ctrl-C, SIGTERM).
 */
async function superviseDevServer(settings: DevServerSettings, envFile: string, io: CliIo): Promise<number> {
  let child: ChildProcess | undefined;
  let stopping = false;
  let restartWanted = false;
  const shown = (file: string) => relative(process.cwd(), file) || file;
  const watcher = new FileWatcher((file) => {
    if (stopping) return;
    io.stdout.write(`harness dev: ${shown(file)} changed, restarting\n`);
    restartWanted = true;
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    else start();
  });
  const alwaysWatched = [settings.agentsModule, envFile];

  const start = () => {
    restartWanted = false;
    watcher.clear(alwaysWatched);
    // --env-file-if-exists: the .env values at every start (the environment's own values win).
    const args = [`--env-file-if-exists=${envFile}`, DEV_SERVER, JSON.stringify(settings)];
    const started = spawn(process.execPath, args, { stdio: ["inherit", "inherit", "inherit", "ipc"], env: { ...io.env } });
    child = started;
    started.on("message", (message: WatchMessage | { type: string }) => {
      if (message.type === "watch") watcher.add((message as WatchMessage).file);
    });
    started.on("exit", (code) => {
      if (stopping) return;
      if (restartWanted) return start();
      if (code !== 0) io.stderr.write("harness dev: the server stopped; it starts again when you save a file\n");
    });
  };

  start();
  return await new Promise<number>((resolvePromise) => {
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      watcher.close();
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return resolvePromise(EXIT.ok);
      // Ctrl-C in a terminal reaches the server too; a SIGTERM to this process is passed on.
      if (signal === "SIGTERM") running.kill("SIGTERM");
      running.once("exit", (code) => resolvePromise(code ?? EXIT.ok));
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
}

/**
 * The origins `--cors` names (all of them, each possibly a comma-separated list); a malformed one
 * is a usage error. Without the flag the server reads `CORS_ORIGINS` (the environment or `.env`).
 */
function corsFlagOrigins(flags: readonly string[]): string[] {
  try {
    return parseCorsOrigins(flags.join(","), "--cors");
  } catch (err) {
    throw usageError("cors", (err as Error).message);
  }
}

async function freePort(hostname: string): Promise<number> {
  const { createServer } = await import("node:net");
  return await new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once("error", (err) => reject(new ServerListenFailed(0, hostname, err)));
    probe.listen(0, hostname, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolvePromise(port));
    });
  });
}
