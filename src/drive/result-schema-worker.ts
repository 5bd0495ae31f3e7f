/**
 * The result-schema thread's entry (a `worker_threads` Worker started by `result-schema-thread.ts`):
 * compiles schemas and checks replies with its own {@link ResultSchemaEngine}, one job at a time,
 * so a costly schema never stalls the server's event loop.
 */
import { parentPort } from "node:worker_threads";
import { ResultSchemaEngine } from "./result-schema-engine.ts";
import type { ResultSchemaJob, ResultSchemaReady, ResultSchemaReply } from "./result-schema-thread.ts";

const engine = new ResultSchemaEngine();
// Loading ajv and building the engine takes most of a second: deadlines start after it.
parentPort?.postMessage({ ready: true } satisfies ResultSchemaReady);

parentPort?.on("message", (job: ResultSchemaJob) => {
  const reply: ResultSchemaReply =
    job.op === "problem" ? { id: job.id, problem: engine.problem(job.schema) } : { id: job.id, check: engine.check(job.text, job.schema) };
  parentPort!.postMessage(reply);
});
