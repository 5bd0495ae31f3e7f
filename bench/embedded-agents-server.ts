/**
 * The embedded shape with the agents of `bench/lambda-agents.ts`, as a child process of
 * `bench/lambda.ts`: a SQLite store in DATA_DIR, the runtime with the Lambda's default flush
 * policy (1 KB / 200 ms, so the only difference to the local cloud is the shape), and the HTTP
 * surface on a free loopback port. Prints `listening on <url>` once it listens.
 */
import { join } from "node:path";
import { closeOnSignals, serve } from "../src/server/server.ts";
import { RUNTIME_DEFAULTS } from "../src/runtime/defaults.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { openSqliteStore } from "../src/sqlite/index.ts";
import { agents, subagents } from "./lambda-agents.ts";

const store = openSqliteStore({ path: join(process.env.DATA_DIR ?? ".", "harness.db") });
const runtime = createRuntime({ agents, subagents, store, flushPolicy: RUNTIME_DEFAULTS.flushPolicy });
await runtime.start();
const server = await serve(runtime, { port: 0, hostname: "127.0.0.1" });
closeOnSignals(server, runtime);
console.log(`listening on ${server.url}`);
