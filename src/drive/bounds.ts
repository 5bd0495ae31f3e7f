import type { AgentTool, AgentToolResult, AgentToolUpdateCallback } from "@earendil-works/pi-agent-core";
import type { Api, AssistantMessageEventStream, Model } from "@earendil-works/pi-ai";
import type { Clock } from "../ports/clock.ts";
import { endStream } from "../agent/block-stream.ts";
import { formatDuration } from "./duration.ts";

/** The error a tool call sees when the run stops under it. */
export const TOOL_ABORTED = "Operation aborted";
/** Abort reason for the watchdog's own stop (an explicit reason spares a DOMException). */
const DISPOSED = "disposed";

/** A pending bound (a turn or tool timeout). */
interface Alarm {
  at: number;
  fire: () => void;
}

/** One call of a tool, as pi's agent loop makes it. */
export interface ToolCall {
  tool: AgentTool<any>;
  id: string;
  params: unknown;
  /** pi's signal for the call. */
  signal: AbortSignal | undefined;
  onUpdate: AgentToolUpdateCallback<any> | undefined;
  /**
   * Neither the run's abort nor the tool timeout releases the call once it started: the call's
   * effect is durable and only its result names it (a `task` call admitting its child). Its own
   * store calls bound it.
   */
  hold?: boolean;
}

/** A tool result that is an error the model sees. */
export function errorResult(text: string): AgentToolResult<Record<string, never>> {
  return { content: [{ type: "text", text }], details: {}, isError: true };
}

/**
 * The time bounds of one drive and the means to stop it: a turn timeout on each model response,
 * a timeout on each tool call, and `abort()`, which ends the response in flight and releases the
 * running tool calls, so a provider or tool that ignores its signal cannot wedge the run.
 * One watchdog timer serves every bound: it wakes every twentieth of the shortest one and fires
 * the bounds that are due (a bound may fire up to 5% late).
 */
export class Bounds {
  readonly #clock: Clock;
  readonly #turnTimeoutMs: number;
  readonly #toolTimeoutMs: number;
  readonly #alarms = new Set<Alarm>();
  #watchdog: AbortController | undefined;
  /** The model response being streamed, if any. */
  #inFlight: { stream: AssistantMessageEventStream; model: Model<Api> } | undefined;
  /** Cancels of the tool calls running now. */
  readonly #runningTools = new Set<() => void>();

  constructor(clock: Clock, limits: { turnTimeoutMs: number; toolTimeoutMs: number }) {
    this.#clock = clock;
    this.#turnTimeoutMs = limits.turnTimeoutMs;
    this.#toolTimeoutMs = limits.toolTimeoutMs;
  }

  /**
   * Bounds a model response by the turn timeout. When it passes, `onTimeout` learns the error
   * (the drive classifies the turn transient), the response is ended with it, and then
   * `stopModel` runs (the run ends on that error anyway: aborting tells the provider to stop).
   */
  boundTurn(
    stream: AssistantMessageEventStream,
    model: Model<Api>,
    hooks: { onTimeout: (error: string) => void; stopModel: () => void },
  ): void {
    const inFlight = { stream, model };
    this.#inFlight = inFlight;
    const limit = this.#turnTimeoutMs;
    const alarm = this.#alarm(limit, () => {
      const error = `model turn timed out after ${formatDuration(limit)}`;
      hooks.onTimeout(error);
      endStream(stream, model, this.#clock.now(), "error", error);
      hooks.stopModel();
    });
    stream.result().then(
      () => {
        this.#alarms.delete(alarm);
        if (this.#inFlight === inFlight) this.#inFlight = undefined;
      },
      () => {},
    );
  }

  /**
   * Runs a tool call raced against `signal` (pi's), `abort()` and the tool timeout. A timeout is
   * an error result the model sees; an abort rejects with {@link TOOL_ABORTED}.
   */
  runTool({ tool, id, params, signal, onUpdate, hold }: ToolCall): Promise<AgentToolResult<any>> {
    if (signal?.aborted) return Promise.reject(new Error(TOOL_ABORTED));
    if (hold) {
      try {
        return Promise.resolve(tool.execute(id, params, signal, onUpdate));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const limit = this.#toolTimeoutMs;
    // The signal the tool sees: aborted with the run (see abort) or at its timeout.
    const toolAbort = new AbortController();
    return new Promise<AgentToolResult<any>>((resolve, reject) => {
      let settled = false;
      const settle = (action: () => void) => {
        if (settled) return;
        settled = true;
        this.#alarms.delete(alarm);
        this.#runningTools.delete(cancel);
        action();
      };
      const cancel = () => {
        toolAbort.abort(new Error(TOOL_ABORTED));
        settle(() => reject(new Error(TOOL_ABORTED)));
      };
      const alarm = this.#alarm(limit, () => {
        toolAbort.abort(new Error(`tool ${tool.name} timed out`));
        settle(() => resolve(errorResult(`tool ${tool.name} timed out after ${formatDuration(limit)}`)));
      });
      this.#runningTools.add(cancel);
      let running: Promise<AgentToolResult<any>>;
      try {
        running = Promise.resolve(tool.execute(id, params, toolAbort.signal, onUpdate));
      } catch (err) {
        running = Promise.reject(err);
      }
      running.then(
        (r) => settle(() => resolve(r)),
        (e) => settle(() => reject(e)),
      );
    });
  }

  /** Ends the response in flight ("aborted") and releases every running tool call (but held ones). */
  abort(): void {
    const inFlight = this.#inFlight;
    if (inFlight) endStream(inFlight.stream, inFlight.model, this.#clock.now(), "aborted", "Request was aborted");
    for (const cancel of [...this.#runningTools]) cancel();
  }

  /** Stops the watchdog (the drive is over). */
  dispose(): void {
    this.#watchdog?.abort(DISPOSED);
    this.#watchdog = undefined;
    this.#alarms.clear();
  }

  /** Calls `fire` once `ms` of clock time have passed, unless cleared first. */
  #alarm(ms: number, fire: () => void): Alarm {
    const alarm: Alarm = { at: this.#clock.now() + ms, fire };
    this.#alarms.add(alarm);
    if (this.#watchdog === undefined) this.#startWatchdog();
    return alarm;
  }

  #startWatchdog(): void {
    const stop = new AbortController();
    this.#watchdog = stop;
    const clock = this.#clock;
    const tick = Math.max(1, Math.min(this.#turnTimeoutMs, this.#toolTimeoutMs) / 20);
    void (async () => {
      for (;;) {
        try {
          await clock.sleep(tick, stop.signal);
        } catch {
          return;
        }
        const now = clock.now();
        for (const alarm of [...this.#alarms]) {
          if (now < alarm.at) continue;
          this.#alarms.delete(alarm);
          alarm.fire();
        }
      }
    })();
  }
}
