/** What the local function host and its child processes say to each other. */

/** How a child is started (its first argument, as JSON). */
export interface ChildSpec {
  functionName: string;
  /** Absolute path of the handler module. */
  handlerModule: string;
  /** Default "handler". */
  handlerExport?: string;
  /** Absolute path of the module `#harness-agents` resolves to. */
  agentsModule: string;
  /** `invoke`: run invocations sent over IPC; `url`: serve the handler as a function URL. */
  mode: "invoke" | "url";
  /** Function timeout (a url-mode request's context counts down from it). */
  timeoutMs: number;
  port?: number;
  host?: string;
  /** The function's memory size (its context's `memoryLimitInMB`); unset: 1024, unlimited. */
  memoryMb?: number;
  /** url mode: the streamed response's maximum (`function-url-limits.ts`); unset: Lambda's 200 MB. */
  streamedResponseMaxBytes?: number;
}

export type HostMessage = { type: "invoke"; id: number; event: unknown; deadline: number };

/**
 * `initMs`: the init phase as Lambda reports it (`Init Duration`, without the runtime's own
 * start): from the start of the handler module's import to its top level having run.
 * `initCpuMs`: the CPU time the process spent in it (all its threads; less moved by a busy
 * machine than the wall time).
 */
export type ChildMessage =
  | { type: "ready"; initMs: number; initCpuMs: number }
  | { type: "listening"; url: string; initMs: number; initCpuMs: number }
  | { type: "result"; id: number; result: unknown }
  | { type: "error"; id: number; error: { name: string; message: string; stack?: string } };
