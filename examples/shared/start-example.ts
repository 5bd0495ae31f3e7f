import type { Hono, MiddlewareHandler } from "hono";
import { join } from "node:path";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import type { SubagentPolicy } from "../../src/agent/subagent-policy.ts";
import { closeOnSignals, serve, type ServerHandle } from "../../src/server/server.ts";
import { listenFailureHint } from "../../src/server/listen-failed.ts";
import { checkPortFree } from "../../src/server/port-check.ts";
import type { Interceptor, Observer } from "../../src/ports/observer.ts";
import { RUNTIME_DEFAULTS } from "../../src/runtime/defaults.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { authFromEnv, type EnvAuth } from "../../src/auth/auth-from-env.ts";
import type { Authenticator } from "../../src/auth/authenticate.ts";
import type { Authorize } from "../../src/protocol/principal.ts";
import { AuthUnavailable } from "../../src/errors.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { consoleObserver, consoleTimingInterceptor } from "../../src/logging/console.ts";
import { exampleFail, log, type ExampleSettings } from "./settings.ts";

/** What an example adds to the common wiring. */
export interface ExampleOptions {
  settings: ExampleSettings;
  agents: Record<string, AgentDefinition>;
  /** Durable subagents: parent agent → the agents its `task` tool may spawn (`createRuntime`'s `subagents`). */
  subagents?: SubagentPolicy;
  /** Observers beside `consoleObserver` (the lifecycle lines `npm start` prints). */
  observers?: Observer[];
  /** Routes of the example's own beside the harness's (a webhook), given the runtime and the server's URL (known once it listens). */
  routes?: (app: Hono, runtime: Runtime, url: () => string) => void;
  /** Mounted before the `/agents` routes (see `AppOptions.middleware`). */
  middleware?: MiddlewareHandler[];
  /** The example's own authentication and policy, in place of the environment's (`authFromEnv`). */
  auth?: ExampleAuth;
  /** What the banner says the example runs ("local-echo (keyless)" and the like). */
  model: string;
  /** Lines of the banner's "Try:" section, with `${base}` already filled in. */
  tryLines: (base: string) => string[];
}

/** An example's own auth (ADR 0043). */
export interface ExampleAuth {
  /**
   * Who is calling, built once the server listens, from its URL (an example that issues its own
   * tokens verifies them against itself). Until then a request is 503 `auth_unavailable`.
   */
  authenticate: (url: string) => Authenticator;
  /** The runtime's policy. */
  authorize: Authorize;
  /** What is on, for the banner. */
  describe: string[];
}

/** A started example: its runtime and listening server. */
export interface RunningExample {
  runtime: Runtime;
  server: ServerHandle;
}

/**
 * The wiring every example shares with `npm start`: a SQLite store in DATA_DIR, a runtime that
 * makes every delta durable at once, `consoleObserver` (LOG_LEVEL=debug adds timings), the HTTP
 * app on PORT, a graceful stop on SIGINT/SIGTERM, and a banner naming the URL and pid.
 */
export async function startExample(options: ExampleOptions): Promise<RunningExample> {
  const { settings } = options;
  const cannotListen = (err: unknown): never => {
    const hint = listenFailureHint(err);
    if (hint === undefined) throw err;
    return exampleFail(settings.name, hint);
  };
  // Before the runtime starts (it would pick up work left in DATA_DIR): a busy port fails now.
  await checkPortFree(settings.port, settings.hostname).catch(cannotListen);
  let auth: Omit<EnvAuth, "authenticate"> & { authenticate: Authenticator } | undefined;
  let listening: Authenticator | undefined;
  if (options.auth) {
    auth = {
      authorize: options.auth.authorize,
      describe: options.auth.describe,
      authenticate: (request) => {
        if (listening === undefined) throw new AuthUnavailable("the server is starting");
        return listening(request);
      },
    };
  } else {
    try {
      auth = authFromEnv(process.env);
    } catch (err) {
      exampleFail(settings.name, (err as Error).message);
    }
  }
  const store = openSqliteStore({ path: join(settings.dataDir, "harness.db") });
  const interceptors: Interceptor[] = settings.debug ? [consoleTimingInterceptor()] : [];
  const runtime = createRuntime({
    agents: options.agents,
    subagents: options.subagents,
    store,
    leaseMs: settings.leaseMs,
    // Sweep often enough that a crashed run resumes about one lease after the crash.
    sweepIntervalMs: Math.min(RUNTIME_DEFAULTS.sweepIntervalMs, Math.max(250, Math.floor(settings.leaseMs / 2))),
    // Embedded writes are cheap: make every delta durable (and visible to streams) at once.
    flushPolicy: { bytes: 0, intervalMs: 0 },
    observers: [consoleObserver(), ...(options.observers ?? [])],
    interceptors,
    ...(auth ? { authorize: auth.authorize } : {}),
  });
  await runtime.start();
  const routes = options.routes;
  // The server's URL for the example's routes: set as soon as it listens.
  let url = "";
  const server = await serve(runtime, {
    port: settings.port,
    hostname: settings.hostname,
    middleware: options.middleware,
    ...(auth ? { auth: { authenticate: auth.authenticate } } : {}),
    cors: settings.corsOrigins.length > 0 ? { origins: settings.corsOrigins } : undefined,
    routes: routes && ((app) => routes(app, runtime, () => url)),
  }).catch(cannotListen);
  url = server.url;
  if (options.auth) listening = options.auth.authenticate(url);
  closeOnSignals(server, runtime, {
    onSignal: (signal) => log(`${signal}: closing (in-flight work is released, not failed)`),
  });
  const base = server.url;
  console.log(`resolute-harness ${settings.name} example listening on ${base}
  model: ${options.model}   data: ${settings.dataDir}   pid: ${process.pid}${settings.corsOrigins.length > 0 ? `\n  browser pages allowed from: ${settings.corsOrigins.join(", ")}` : ""}${auth ? `\n  auth: ${auth.describe.join(" + ")} (every /agents and /attachments request needs a token)` : ""}
Try:
${options.tryLines(base).map((line) => `  ${line}`).join("\n")}`);
  return { runtime, server };
}
