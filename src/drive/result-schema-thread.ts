/**
 * Result schemas compiled and checked off the event loop: one worker thread runs a
 * {@link ResultSchemaEngine}, one job at a time, with a deadline and a heap limit. A job past its
 * deadline or over the heap limit ends the thread (the next job starts a fresh one) and is
 * answered with the limit it broke; the server's loop never runs ajv (docs/adr/0026).
 */
import { Worker } from "node:worker_threads";
import { HarnessError } from "../errors.ts";
import type { ResultCheck } from "./result-schema-engine.ts";

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

/** Too many result schemas are waiting to be checked: the request may be retried later. */
export class ResultSchemaBusy extends HarnessError {
  constructor(queued: number) {
    super("schema_checker_busy", `${queued} result schemas are already waiting to be checked: retry later`);
  }
}

interface Pending {
  job: ResultSchemaJob;
  resolve: (reply: ResultSchemaReply) => void;
}

/** One worker thread and the queue of jobs in front of it. */
export class ResultSchemaThread {
  readonly #url: URL;
  readonly #limits: ResultSchemaThreadLimits;
  #worker: Worker | undefined;
  #ready = false;
  #running: (Pending & { timer: NodeJS.Timeout | undefined }) | undefined;
  readonly #queue: Pending[] = [];
  #nextId = 1;

  /** `url` is the worker entry (`result-schema-worker.{ts,js,mjs}`). */
  constructor(url: URL, limits: Partial<ResultSchemaThreadLimits> = {}) {
    this.#url = url;
    this.#limits = { ...RESULT_SCHEMA_THREAD_LIMITS, ...limits };
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
    if (bounded && this.#queue.length >= this.#limits.maxQueued) return Promise.reject(new ResultSchemaBusy(this.#queue.length));
    return new Promise((resolve) => {
      this.#queue.push({ job, resolve });
      this.#next();
    });
  }

  #next(): void {
    if (this.#running || this.#queue.length === 0) {
      if (!this.#running) this.#worker?.unref();
      return;
    }
    const worker = this.#thread();
    worker.ref();
    this.#running = { ...this.#queue.shift()!, timer: undefined };
    if (this.#ready) this.#send(worker);
    else this.#arm(STARTUP_TIMEOUT_MS, "starting the result-schema thread");
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
    running.timer = setTimeout(() => this.#restart(`${what} took longer than ${ms} ms`), ms);
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(this.#url, { resourceLimits: { maxOldGenerationSizeMb: this.#limits.maxHeapMb } });
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
      this.#restart(reason, false);
    });
    worker.on("exit", () => {
      if (worker === this.#worker) this.#restart("the result-schema thread exited", false);
    });
    this.#worker = worker;
    return worker;
  }

  /** Answers the running job with `reason`, drops the thread, and starts the next job on a new one. */
  #restart(reason: string, terminate = true): void {
    const worker = this.#worker;
    this.#worker = undefined;
    if (terminate) void worker?.terminate();
    this.#fail(reason);
    this.#next();
  }

  #fail(reason: string): void {
    const running = this.#running;
    if (!running) return;
    clearTimeout(running.timer);
    this.#running = undefined;
    running.resolve(failedReply(running.job, reason));
  }
}

function failedReply(job: ResultSchemaJob, reason: string): ResultSchemaReply {
  return job.op === "problem" ? { id: job.id, problem: reason } : { id: job.id, check: { ok: false, reason } };
}
