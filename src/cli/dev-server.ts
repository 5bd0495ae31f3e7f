/**
 * The server `harness dev` runs: the user's agents module on an embedded runtime with a SQLite
 * store, the HTTP API and the chat page at `/`. Not a public entry: its settings come from the
 * `harness dev` command as one JSON argument, and it tells the command (over IPC) every file of
 * the user's it loads, which the command watches to start it again after an edit.
 */
import { existsSync } from "node:fs";
import { registerHooks } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { mountChatPage } from "../chat-page/mount-chat-page.ts";
import { checkAgentsModule, type HarnessAgentsModule } from "../lambda/agents-module.ts";
import { listenFailureHint } from "../server/listen-failed.ts";
import { syntaxErrorFrame } from "./syntax-error-frame.ts";
import { closeOnSignals, serve } from "../server/server.ts";
import { consoleObserver, consoleTimingInterceptor } from "../logging/console.ts";
import { stdoutLine } from "../logging/stdout-lines.ts";
import { RUNTIME_DEFAULTS } from "../runtime/defaults.ts";
import { createRuntime } from "../runtime/runtime.ts";
import { authFromEnv, type EnvAuth } from "../auth/auth-from-env.ts";
import { parseCorsOrigins } from "../http/cors-origins.ts";
import { openSqliteStore } from "../sqlite/index.ts";

/** What `harness dev` passes its server. */
export interface DevServerSettings {
  /** Absolute path of the agents module. */
  agentsModule: string;
  port: number;
  hostname: string;
  /** Absolute path of the data folder (the SQLite file is harness.db inside). */
  dataDir: string;
  /** Absolute path of the .env file the server was started with, when there is one. */
  envFile?: string;
  leaseMs: number;
  debug: boolean;
  /** Origins `--cors` gave; when none, `CORS_ORIGINS` (the environment or `.env`) is read. */
  corsOrigins?: string[];
}

const settings = JSON.parse(process.argv[2] ?? "{}") as DevServerSettings;
const cwd = process.cwd();
const shown = (path: string) => (relative(cwd, path).startsWith("..") ? path : relative(cwd, path) || ".");

/** Prints one line and exits 1, once the files reported so far have reached the command. */
async function fail(message: string): Promise<never> {
  console.error(`harness dev: ${message}`);
  // IPC messages go out in order: once this one is sent, every `watch` before it is too.
  if (process.send) await new Promise<void>((resolve) => process.send!({ type: "failed" }, () => resolve()));
  process.exit(1);
}

/** The message the `harness dev` command reads: a file to watch. */
export interface WatchMessage {
  type: "watch";
  file: string;
}

// Every module the agents module loads from the user's files (not from node_modules), reported
// before it is read, so a file that fails to parse is watched too.
registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith("file:") && !url.includes("/node_modules/")) process.send?.({ type: "watch", file: fileURLToPath(url) } satisfies WatchMessage);
    return nextLoad(url, context);
  },
});

const mod = await import(pathToFileURL(settings.agentsModule).href)
  .then((loaded) => checkAgentsModule(loaded as HarnessAgentsModule))
  .catch((err: unknown) => {
    // A mistake in the module (a syntax error, a throw at import, a missing export): said with the
    // module's name; the command starts the server again at the next edit.
    // A syntax error says where, with a code frame (Node's message alone does not).
    const reason =
      syntaxErrorFrame(err, shown) ??
      (err instanceof SyntaxError || err instanceof TypeError ? err.message : err instanceof Error ? String(err.stack ?? err.message) : String(err));
    return fail(`cannot load ${shown(settings.agentsModule)}: ${reason}\n  (fix it and save: the server starts again by itself)`);
  });
const names = Object.keys(mod.agents);
if (names.length === 0) await fail(`${shown(settings.agentsModule)} exports no agents: export const agents = { assistant: { initialize: … } }`);

const log = (line: string) => stdoutLine(line);
let auth: EnvAuth | undefined;
try {
  auth = authFromEnv(process.env);
} catch (err) {
  await fail((err as Error).message);
}
// Origins whose pages may call the API (`--cors`, else CORS_ORIGINS). They go to `serve()` as its
// `cors`, so its loopback rules stay: bound to a loopback address, a request whose `Host` is not a
// loopback name is refused (DNS rebinding) whatever its origin; any other origin gets 403.
let corsOrigins: string[] = settings.corsOrigins ?? [];
if (corsOrigins.length === 0) {
  try {
    corsOrigins = parseCorsOrigins(process.env.CORS_ORIGINS);
  } catch (err) {
    await fail((err as Error).message);
  }
}
const runtime = createRuntime({
  agents: mod.agents,
  subagents: mod.subagents,
  subagentLimits: mod.subagentLimits,
  store: openSqliteStore({ path: join(settings.dataDir, "harness.db") }),
  leaseMs: settings.leaseMs,
  // A crashed or reloaded run resumes about one lease later at most (a reload releases it at once).
  sweepIntervalMs: Math.min(RUNTIME_DEFAULTS.sweepIntervalMs, Math.max(250, Math.floor(settings.leaseMs / 2))),
  // Embedded writes are cheap: every delta is durable (and on the stream) at once.
  flushPolicy: { bytes: 0, intervalMs: 0 },
  observers: [consoleObserver({ write: log }), ...(mod.observers ?? [])],
  interceptors: [...(settings.debug ? [consoleTimingInterceptor({ write: log })] : []), ...(mod.interceptors ?? [])],
  ...(auth ? { authorize: auth.authorize } : {}),
  // The console's Tools view: the operator calls an agent's tool directly (development only).
  directToolCalls: true,
});
await runtime.start();
const server = await serve(runtime, {
  port: settings.port,
  hostname: settings.hostname,
  ...(auth ? { auth } : {}),
  ...(corsOrigins.length > 0 ? { cors: { origins: corsOrigins } } : {}),
  routes: (app) => mountChatPage(app, { agents: names }),
}).catch((err: unknown) => fail(listenFailureHint(err) ?? String(err)));
closeOnSignals(server, runtime, {
  onSignal: (signal) => log(`${new Date().toISOString()} ${signal}: closing (in-flight work is released, not failed)`),
});

const env = settings.envFile && existsSync(settings.envFile) ? ` · env: ${shown(settings.envFile)}` : "";
console.log(
  `harness dev · ${server.url} (chat page at /, console at /console, API at /agents/<agent>/<instance>) · agents: ${names.join(", ")} from ${shown(settings.agentsModule)} · data: ${shown(join(settings.dataDir, "harness.db"))}${env}${auth ? ` · auth: ${auth.describe.join(" + ")}` : ""}${corsOrigins.length > 0 ? ` · cors: ${corsOrigins.join(", ")}` : ""} · saving a file reloads`,
);
