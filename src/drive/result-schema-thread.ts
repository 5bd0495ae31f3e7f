/**
 * Result schemas compiled and checked off the event loop: one worker thread runs a
 * {@link ResultSchemaEngine}, one job at a time, with a deadline and a heap limit. A job past its
 * deadline or over the heap limit ends the thread (the next job starts a fresh one) and is
 * answered with the limit it broke; the server's loop never runs ajv. The schema of such a job is
 * remembered (by digest): sent again, it is refused at once, without costing another thread
 * (docs/adr/0026).
 */
import { createHash } from "node:crypto";
import type { Worker } from "node:worker_threads";
import { HarnessError } from "../errors.ts";
import type { ResultCheck } from "./result-schema-engine.ts";
import { startWorker } from "./worker-exec-argv.ts";

/** A job for the thread. */
export type ResultSchemaJob =
  | { id: number; op: "problem"; schema: unknown }
  | { id: number; op: "check"; schema: unknown; text: string };

/** The thread's answer to a job. */
export type ResultSchemaReply = { id: number; problem?: string; check?: ResultCheck };

/** The thread's first message: its engine is built and jobs may come. */
export type ResultSchemaReady = { ready: true };

/** Longest a new thread may take to load ajv and build its engine. */
const STARTUP_TIMEOUT_MS = 30_000;

/** Limits of the result-schema thread. */
export interface ResultSchemaThreadLimits {
  /** Longest one compile or check may run (the thread's start-up not included). Default 10 s. */
  jobTimeoutMs: number;
  /** The thread's heap ceiling (its cache of compiled validators included). Default 256 MiB. */
  maxHeapMb: number;
  /** Admission checks waiting behind the running job before more are refused ({@link ResultSchemaBusy}). Default 64. */
  maxQueued: number;
}

/** Defaults of {@link ResultSchemaThreadLimits}. */
export const RESULT_SCHEMA_THREAD_LIMITS: ResultSchemaThreadLimits = { jobTimeoutMs: 10_000, maxHeapMb: 256, maxQueued: 64 };

/** Digests of schemas that broke the deadline or the heap limit, remembered (oldest forgotten first). */
export const MAX_HOSTILE_SCHEMAS = 1_024;

/** Too many result schemas are waiting to be checked: the request may be retried later. */
export class ResultSchemaBusy extends HarnessError {
  /** `queued` schemas wait already; or, with `why`, the thread could not take the job (it did not start). */
  constructor(queued: number, why?: string) {
    super("schema_checker_busy", why === undefined ? `${queued} result schemas are already waiting to be checked: retry later` : `${why}: retry later`);
  }
}

interface Pending {
  job: ResultSchemaJob;
  /** The schema's digest (undefined when it cannot be serialized: the limits refuse it first). */
  digest: string | undefined;
  resolve: (reply: ResultSchemaReply) => void;
  reject: (err: Error) => void;
}

/** One worker thread and the queue of jobs in front of it. */
export class ResultSchemaThread {
  readonly #url: URL;
  readonly #limits: ResultSchemaThreadLimits;
  #worker: Worker | undefined;
  #ready = false;
  #running: (Pending & { timer: NodeJS.Timeout | undefined }) | undefined;
  readonly #queue: Pending[] = [];
  /** Digest → the limit that schema broke. */
  readonly #hostile = new Map<string, string>();
  #nextId = 1;
  #threadsStarted = 0;

  /** `url` is the worker entry (`result-schema-worker.{ts,js,mjs}`). */
  constructor(url: URL, limits: Partial<ResultSchemaThreadLimits> = {}) {
    this.#url = url;
    this.#limits = { ...RESULT_SCHEMA_THREAD_LIMITS, ...limits };
  }

  /** The limits this thread runs under. */
  get limits(): Readonly<ResultSchemaThreadLimits> {
    return this.#limits;
  }

  /** Worker threads started so far (one more after each job that broke a limit). */
  get threadsStarted(): number {
    return this.#threadsStarted;
  }

  /** Why `schema` cannot be a result schema, or undefined (see `ResultSchemaEngine.problem`). */
  async problem(schema: unknown): Promise<string | undefined> {
    const reply = await this.#run({ id: this.#nextId++, op: "problem", schema }, true);
    return reply.problem;
  }

  /**
   * Checks `text` against `schema` (see `ResultSchemaEngine.check`). Never refused for a full
   * queue: it comes from a run already admitted, and refusing it would cost the run a corrective turn.
   */
  async check(text: string, schema: unknown): Promise<ResultCheck> {
    const reply = await this.#run({ id: this.#nextId++, op: "check", schema, text }, false);
    return reply.check!;
  }

  /** Ends the thread (jobs still queued are answered as failed). */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#fail("the result-schema thread was closed");
    for (const pending of this.#queue.splice(0)) pending.resolve(failedReply(pending.job, "the result-schema thread was closed"));
    await worker?.terminate();
  }

  #run(job: ResultSchemaJob, bounded: boolean): Promise<ResultSchemaReply> {
    const digest = schemaDigest(job.schema);
    const broke = digest === undefined ? undefined : this.#hostile.get(digest);
    if (broke !== undefined) return Promise.resolve(failedReply(job, `${broke} (this schema did so before: it is refused without another try)`));
    if (bounded && this.#queue.length >= this.#limits.maxQueued) return Promise.reject(new ResultSchemaBusy(this.#queue.length));
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, digest, resolve, reject });
      this.#next();
    });
  }

  #next(): void {
    while (!this.#running && this.#queue.length > 0) {
      this.#running = { ...this.#queue.shift()!, timer: undefined };
      let worker: Worker;
      try {
        worker = this.#thread();
      } catch (err) {
        // Node refused to construct the thread (its options, its entry): as a thread that failed
        // at start-up, no verdict on the schema (admission answers busy, not a 500); the next
        // job tries again.
        this.#fail(`the result-schema thread could not start: ${(err as Error).message}`, true);
        continue;
      }
      worker.ref();
      if (this.#ready) this.#send(worker);
      else this.#arm(STARTUP_TIMEOUT_MS, "starting the result-schema thread");
      return;
    }
    if (!this.#running) this.#worker?.unref();
  }

  /** Posts the running job with its deadline. */
  #send(worker: Worker): void {
    const running = this.#running!;
    const what = running.job.op === "problem" ? "compiling the result schema" : "checking the reply against the result schema";
    this.#arm(this.#limits.jobTimeoutMs, what);
    worker.postMessage(running.job);
  }

  /** (Re)starts the running job's deadline: past it, the thread is ended and the job answered. */
  #arm(ms: number, what: string): void {
    const running = this.#running!;
    clearTimeout(running.timer);
    running.timer = setTimeout(() => this.#restart(`${what} took longer than ${ms} ms`, true, this.#ready), ms);
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    // The parent's Node options the thread can take (a V8 heap flag such as `npm start`'s
    // --max-semi-space-size is refused in a worker, and applies to it anyway): worker-exec-argv.ts.
    const worker = startWorker(this.#url, { resourceLimits: { maxOldGenerationSizeMb: this.#limits.maxHeapMb } });
    this.#threadsStarted++;
    this.#ready = false;
    worker.on("message", (reply: ResultSchemaReply | ResultSchemaReady) => {
      if (worker !== this.#worker) return;
      if ("ready" in reply) {
        this.#ready = true;
        if (this.#running) this.#send(worker);
        return;
      }
      const running = this.#running;
      if (running === undefined || running.job.id !== reply.id) return;
      clearTimeout(running.timer);
      this.#running = undefined;
      running.resolve(reply);
      this.#next();
    });
    worker.on("error", (err: Error & { code?: string }) => {
      if (worker !== this.#worker) return;
      const reason =
        err.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? `the result-schema thread ran out of memory (${this.#limits.maxHeapMb} MiB)`
          : `the result-schema thread failed: ${err.message}`;
      this.#restart(reason, false, err.code === "ERR_WORKER_OUT_OF_MEMORY");
    });
    worker.on("exit", () => {
      if (worker === this.#worker) this.#restart("the result-schema thread exited", false, false);
    });
    this.#worker = worker;
    return worker;
  }

  /**
   * Answers the running job with `reason`, drops the thread, and starts the next job on a new one.
   * `hostile`: the job itself broke the limit (not the thread's start-up or an unexplained exit), so
   * its schema is remembered and refused at once next time.
   */
  #restart(reason: string, terminate: boolean, hostile: boolean): void {
    const worker = this.#worker;
    this.#worker = undefined;
    if (terminate) void worker?.terminate();
    const digest = this.#running?.digest;
    if (hostile && digest !== undefined) {
      this.#hostile.set(digest, reason);
      if (this.#hostile.size > MAX_HOSTILE_SCHEMAS) this.#hostile.delete(this.#hostile.keys().next().value!);
    }
    this.#fail(reason, !this.#ready);
    this.#next();
  }

  /**
   * Answers the running job with `reason`. `startUp`: the thread failed before it could take the
   * job, which says nothing about the schema, so an admission check is refused as busy (503,
   * retry) rather than blamed on the schema (400).
   */
  #fail(reason: string, startUp = false): void {
    const running = this.#running;
    if (!running) return;
    clearTimeout(running.timer);
    this.#running = undefined;
    if (startUp && running.job.op === "problem") running.reject(new ResultSchemaBusy(0, reason));
    else running.resolve(failedReply(running.job, reason));
  }
}

/** SHA-256 of the schema's JSON (the limits are checked before a schema reaches the thread). */
function schemaDigest(schema: unknown): string | undefined {
  try {
    return createHash("sha256").update(JSON.stringify(schema) ?? "").digest("hex");
  } catch {
    return undefined;
  }
}

function failedReply(job: ResultSchemaJob, reason: string): ResultSchemaReply {
  return job.op === "problem" ? { id: job.id, problem: reason } : { id: job.id, check: { ok: false, reason } };
}
