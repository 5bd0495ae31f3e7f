import { resolve } from "node:path";
import { escapeControl } from "../../src/logging/console.ts";
import { parseCorsOrigins } from "../../src/http/cors-origins.ts";

/** What every example reads from its environment, the same way `npm start` does. */
export interface ExampleSettings {
  /** The example's name (its folder under examples/). */
  name: string;
  /** PORT (the example's own default; 0 = any free port). */
  port: number;
  /** HOST (default 127.0.0.1). */
  hostname: string;
  /** DATA_DIR (default ./harness-data/<name>): the SQLite file is harness.db inside. */
  dataDir: string;
  /** LEASE_MS (default 10000, at least 300). */
  leaseMs: number;
  /** LOG_LEVEL=debug. */
  debug: boolean;
  /** CORS_ORIGINS: origins whose pages may call the API from a browser (none by default). */
  corsOrigins: string[];
}

/** Reads PORT, HOST, DATA_DIR, LEASE_MS, LOG_LEVEL and CORS_ORIGINS; a bad value ends the process with a message. */
export function exampleSettings(name: string, defaultPort: number, env: NodeJS.ProcessEnv = process.env): ExampleSettings {
  const port = env.PORT === undefined || env.PORT === "" ? defaultPort : Number(env.PORT);
  const leaseMs = Number(env.LEASE_MS || 10_000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) exampleFail(name, `PORT must be a port number, got ${env.PORT}`);
  if (!Number.isFinite(leaseMs) || leaseMs < 300) exampleFail(name, `LEASE_MS must be at least 300, got ${env.LEASE_MS}`);
  let corsOrigins: string[] = [];
  try {
    corsOrigins = parseCorsOrigins(env.CORS_ORIGINS);
  } catch (err) {
    exampleFail(name, (err as Error).message);
  }
  return {
    name,
    port,
    hostname: env.HOST || "127.0.0.1",
    dataDir: resolve(env.DATA_DIR || `./harness-data/${name}`),
    leaseMs,
    debug: env.LOG_LEVEL === "debug",
    corsOrigins,
  };
}

/** Prints `<name> example: <message>` and exits 1 (a setting the example cannot run with). */
export function exampleFail(name: string, message: string): never {
  console.error(`${name} example: ${message}`);
  process.exit(1);
}

/** One log line, prefixed with the wall-clock time; control characters escaped (one call, one line). */
export function log(message: string): void {
  console.log(`${new Date().toISOString()} ${escapeControl(message)}`);
}
