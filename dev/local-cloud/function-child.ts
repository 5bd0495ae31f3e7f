/**
 * One local Lambda execution environment ("container"), run as a child process by
 * `function-host.ts`: binds `#harness-agents`, installs the `awslambda` global, imports the
 * handler module (its init phase), then either serves it as a function URL or runs invocations
 * received over IPC, one at a time, each with a context counting down to the deadline the host
 * set. A crash, a kill or a timeout ends the process; the host starts a new one (a cold start).
 */
import { register } from "node:module";
import { pathToFileURL } from "node:url";
import { installFaultsFromEnv } from "../faults/process-faults.ts";
import { installAwsLambdaGlobal, lambdaContext, serveFunctionUrl } from "./awslambda-local.ts";
import type { ChildSpec, HostMessage, ChildMessage } from "./function-protocol.ts";

const spec = JSON.parse(process.argv[2] ?? "{}") as ChildSpec;
const send = (message: ChildMessage) => process.send?.(message);
// A container never outlives its host (a crashed test runner must not leave servers behind).
process.on("disconnect", () => process.exit(0));

// The hook beside this file, in this file's own form (`.ts` from the sources, `.mjs` when the host
// built the container's code: see `childEntryFor`). Only a handler run from its sources needs it:
// a bundle (the construct's `.mjs`) has `#harness-agents` bound by esbuild, and a registered hook
// would put every module resolution of its cold start through the hooks thread, which no Lambda
// function pays.
if (spec.handlerModule.endsWith(".ts")) {
  register(`./agents-alias-hook${/\.[a-z]+$/.exec(import.meta.url)![0]}`, import.meta.url, { data: { target: pathToFileURL(spec.agentsModule).href } });
}
installAwsLambdaGlobal();
// The fault seam (tests): HARNESS_FAULTS in the function's environment crashes or pauses it at a
// named phase; installed before the handler module builds its runtime.
installFaultsFromEnv();

let handler: (...args: unknown[]) => unknown;
let initMs = 0;
let initCpuMs = 0;
try {
  const cpuStart = process.cpuUsage();
  const importStart = performance.now();
  const mod = (await import(pathToFileURL(spec.handlerModule).href)) as Record<string, unknown>;
  handler = mod[spec.handlerExport ?? "handler"] as typeof handler;
  if (typeof handler !== "function") throw new Error(`${spec.handlerModule} exports no function ${spec.handlerExport ?? "handler"}`);
  initMs = performance.now() - importStart;
  const cpu = process.cpuUsage(cpuStart);
  initCpuMs = (cpu.user + cpu.system) / 1000;
} catch (err) {
  // An init error: Lambda reports it and discards the environment.
  console.error(`[${spec.functionName}] init failed`, err);
  process.exit(1);
}

if (spec.mode === "url") {
  const server = await serveFunctionUrl(handler, {
    port: spec.port,
    host: spec.host,
    functionName: spec.functionName,
    timeoutMs: spec.timeoutMs,
    memoryMb: spec.memoryMb,
    streamedResponseMaxBytes: spec.streamedResponseMaxBytes,
  });
  send({ type: "listening", url: server.url, initMs, initCpuMs });
} else {
  process.on("message", (message: HostMessage) => {
    if (message.type !== "invoke") return;
    void (async () => {
      const context = lambdaContext(spec.functionName, message.deadline, spec.memoryMb);
      try {
        const result = await handler(message.event, context);
        send({ type: "result", id: message.id, result: result ?? null });
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        send({ type: "error", id: message.id, error: { name: e.name, message: e.message, stack: e.stack } });
      }
    })();
  });
  send({ type: "ready", initMs, initCpuMs });
}
