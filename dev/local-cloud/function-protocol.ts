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
}

export type HostMessage = { type: "invoke"; id: number; event: unknown; deadline: number };

export type ChildMessage =
  | { type: "ready" }
  | { type: "listening"; url: string }
  | { type: "result"; id: number; result: unknown }
  | { type: "error"; id: number; error: { name: string; message: string; stack?: string } };
