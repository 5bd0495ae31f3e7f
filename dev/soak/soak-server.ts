/**
 * The embedded soak's server process: what `npm start` (examples/basic/main.ts) runs, a SQLite
 * store and the HTTP surface, with the soak's agents (the basic assistant, which may delegate to
 * `researcher` children: `soak-agents.ts`). `EmbeddedServer` starts it with `entry: "soak"`.
 *
 * Environment: PORT, DATA_DIR, LEASE_MS (as the basic example's).
 */
import { join, resolve } from "node:path";
import { closeOnSignals, serve } from "../../src/server/server.ts";
import { consoleObserver } from "../../src/logging/console.ts";
import { stdoutLine } from "../../src/logging/stdout-lines.ts";
import { RUNTIME_DEFAULTS } from "../../src/runtime/defaults.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { agents, subagents } from "./soak-agents.ts";

const env = process.env;
const leaseMs = Number(env.LEASE_MS || 10_000);
const store = openSqliteStore({ path: join(resolve(env.DATA_DIR || "./harness-data"), "harness.db") });
const runtime = createRuntime({
  agents,
  subagents,
  store,
  leaseMs,
  // As the basic example: a crashed run resumes about one lease after the crash.
  sweepIntervalMs: Math.min(RUNTIME_DEFAULTS.sweepIntervalMs, Math.max(250, Math.floor(leaseMs / 2))),
  flushPolicy: { bytes: 0, intervalMs: 0 },
  observers: [consoleObserver({ write: stdoutLine })],
});
await runtime.start();
const server = await serve(runtime, { port: Number(env.PORT || 0), hostname: "127.0.0.1" });
closeOnSignals(server, runtime);
console.log(`soak server listening on ${server.url} (pid ${process.pid})`);
