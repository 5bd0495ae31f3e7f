/**
 * The walking skeleton (`npm start`): one agent, a SQLite store, an observer and an interceptor,
 * one tool, and the HTTP surface on http://127.0.0.1:8484.
 *
 *   npm start                                   # keyless: a deterministic local model
 *   MODEL=anthropic/claude-sonnet-4-5 ANTHROPIC_API_KEY=… npm start   # a real provider
 *
 * Then, in another terminal:
 *
 *   curl -s localhost:8484/agents/assistant/demo -d '{"kind":"user","body":"what time is it?"}'
 *   curl -s 'localhost:8484/agents/assistant/demo?wait=true' -d '{"kind":"user","body":"hello there"}'
 *   curl -N localhost:8484/agents/assistant/demo
 *   curl -s localhost:8484/agents/assistant/demo/steer -d '{"body":"answer in French"}'
 *
 * Durability: dispatch `{"kind":"user","body":"tell me slowly"}` (the keyless model streams a
 * message containing "slow" at a crawl), `kill -9` the process, `npm start` again: after the
 * lease expires (LEASE_MS, 10 s here) a fresh attempt finishes it; `curl -N` shows the records of
 * both attempts, told apart by `attemptId`.
 *
 * Environment: PORT (8484; 0 = any free port), HOST (127.0.0.1), DATA_DIR (./harness-data),
 * MODEL ("provider/model"; unset = keyless), LEASE_MS (10000), LOG_LEVEL (info | debug),
 * CORS_ORIGINS (comma-separated origins whose pages may call the API from a browser; unset =
 * none: a page of another origin is refused with 403), HARNESS_BEARER_TOKEN (the operator's token),
 * AUTH_ISSUER + AUTH_AUDIENCE [+ AUTH_JWKS_URL, AUTH_OWNER_CLAIM] (users signed in by an OIDC
 * issuer, each reaching the instance named by their `sub`): with either, every request needs a token.
 */
import { join, resolve } from "node:path";
import { closeOnSignals, serve } from "../../src/server/server.ts";
import { listenFailureHint } from "../../src/server/listen-failed.ts";
import { checkPortFree } from "../../src/server/port-check.ts";
import { consoleObserver, consoleTimingInterceptor } from "../../src/logging/console.ts";
import { stdoutLine } from "../../src/logging/stdout-lines.ts";
import { RUNTIME_DEFAULTS } from "../../src/runtime/defaults.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { resolveModel } from "../../src/agent/models.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { parseCorsOrigins } from "../../src/http/cors-origins.ts";
import { agents } from "./agents.ts";
import { authFromEnv, type EnvAuth } from "../../src/auth/auth-from-env.ts";

const env = process.env;
const port = env.PORT === undefined || env.PORT === "" ? 8484 : Number(env.PORT);
const hostname = env.HOST || "127.0.0.1";
const dataDir = resolve(env.DATA_DIR || "./harness-data");
const leaseMs = Number(env.LEASE_MS || 10_000);
const debug = env.LOG_LEVEL === "debug";
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`PORT must be a port number, got ${env.PORT}`);
if (!Number.isFinite(leaseMs) || leaseMs < 300) fail(`LEASE_MS must be at least 300, got ${env.LEASE_MS}`);
let corsOrigins: string[] = [];
try {
  corsOrigins = parseCorsOrigins(env.CORS_ORIGINS);
} catch (err) {
  fail((err as Error).message);
}

let auth: EnvAuth | undefined;
try {
  auth = authFromEnv(env);
} catch (err) {
  fail((err as Error).message);
}

// Log lines go out once per event-loop turn (a busy server logs three per submission).
const log = (message: string) => stdoutLine(`${new Date().toISOString()} ${message}`);

// A real provider is resolved once now, so a missing key or unknown model fails at start
// rather than on the first claim.
if (env.MODEL) {
  try {
    await resolveModel(env.MODEL, env);
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
}

const cannotListen = (err: unknown): never => {
  const hint = listenFailureHint(err);
  if (hint === undefined) throw err;
  return fail(hint);
};
// Before the runtime starts (it would pick up work left in DATA_DIR): a busy port fails now.
await checkPortFree(port, hostname).catch(cannotListen);

const store = openSqliteStore({ path: join(dataDir, "harness.db") });

const runtime = createRuntime({
  agents,
  store,
  leaseMs,
  // Sweep often enough that a crashed run resumes about one lease after the crash.
  sweepIntervalMs: Math.min(RUNTIME_DEFAULTS.sweepIntervalMs, Math.max(250, Math.floor(leaseMs / 2))),
  // Embedded writes are cheap: make every delta durable (and visible to streams) at once.
  flushPolicy: { bytes: 0, intervalMs: 0 },
  observers: [consoleObserver({ write: stdoutLine })],
  interceptors: debug ? [consoleTimingInterceptor({ write: stdoutLine })] : [],
  ...(auth ? { authorize: auth.authorize } : {}),
});

await runtime.start();
const server = await serve(runtime, {
  port,
  hostname,
  cors: corsOrigins.length > 0 ? { origins: corsOrigins } : undefined,
  ...(auth ? { auth } : {}),
}).catch(cannotListen);
closeOnSignals(server, runtime, {
  onSignal: (signal) => log(`${signal}: closing (in-flight work is released, not failed)`),
});

const base = server.url;
const modelName = env.MODEL ? `${env.MODEL}` : "local-echo (keyless)";
console.log(`resolute-harness basic example listening on ${base}
  model: ${modelName}   data: ${dataDir}   pid: ${process.pid}${corsOrigins.length > 0 ? `\n  browser pages allowed from: ${corsOrigins.join(", ")}` : ""}${auth ? `\n  auth: ${auth.describe.join(" + ")} (every /agents and /attachments request needs a token)` : ""}
Try:
  curl -s ${base}/agents/assistant/demo -d '{"kind":"user","body":"what time is it?"}'
  curl -s '${base}/agents/assistant/demo?wait=true' -d '{"kind":"user","body":"hello there"}'
  curl -N ${base}/agents/assistant/demo
  curl -s ${base}/agents/assistant/demo/steer -d '{"body":"answer in French"}'`);

function fail(message: string): never {
  console.error(`basic example: ${message}`);
  process.exit(1);
}
