import type { HarnessEvent, Interceptor, Observer } from "../ports/observer.ts";
import { sessionKeyString } from "../store/submission.ts";

/** Where and how {@link consoleObserver} and {@link consoleTimingInterceptor} write. */
export interface ConsoleLogOptions {
  /** Receives each line (default `console.log`). */
  write?: (line: string) => void;
  /** Prefix each line with the wall-clock time as RFC 3339 (default true). */
  timestamps?: boolean;
}

// C0 controls, DEL, C1 controls (some terminals act on 0x9b as CSI), the Unicode line and
// paragraph separators, and the bidirectional controls (marks, embeddings, overrides, isolates:
// U+202E shows `succeeded` for a value spelled `deddeccus`, the "Trojan Source" trick).
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * `text` with every control character written as an escape (`\n`, `\x1b`, `\u2028`, `\u202e`): a
 * value a client or a model chose (a cancel reason, a tool name, an error) cannot start a forged
 * log line, drive the terminal the log is read in, or reorder what the line shows.
 */
export function escapeControl(text: string): string {
  return text.replace(CONTROL, (c) => NAMED[c] ?? (c.charCodeAt(0) <= 0xff ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}` : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
}

/** A value for a log line: control characters escaped. */
const v = (value: unknown): string => escapeControl(String(value));

function lineWriter(options: ConsoleLogOptions): (message: string) => void {
  const write = options.write ?? ((line: string) => console.log(line));
  const timestamps = options.timestamps ?? true;
  return (message) => write(timestamps ? `${new Date().toISOString()} ${message}` : message);
}

/**
 * An observer that logs one line per lifecycle event worth a human's attention: admission,
 * claim (with the attempt number), finished tool call, recovery, compaction and settlement (with its
 * error and the tokens it consumed).
 * What `npm start` prints; pass it in `observers` to see the same from a library.
 */
export function consoleObserver(options: ConsoleLogOptions = {}): Observer {
  const log = lineWriter(options);
  return (event: HarnessEvent) => {
    const c = event.correlation;
    // Every value from outside (ids, names, reasons, errors, details) is escaped: one event, one line.
    const where = `${v(sessionKeyString(c.sessionKey))} sub=${v(c.submissionId ?? "-")}`;
    switch (event.type) {
      case "submission_admitted":
        log(`admitted ${where}${event.replayed ? " (replayed, idempotent)" : ""}`);
        break;
      case "submission_claimed":
        log(`claimed ${where} attempt=${v(c.attemptId ?? "-")} (#${event.attemptCount})`);
        break;
      case "tool_call_ended":
        log(`tool finished ${where} ${v(event.toolName)}${event.isError ? " (error)" : ""}`);
        break;
      case "recovery":
        log(`recovery ${where} ${v(event.decision)}: ${v(event.detail)}`);
        break;
      case "compaction":
        log(`compacted ${where} ${v(event.reason)}: ~${event.summarizedTokens} tokens summarized, ~${event.keptTokens} kept`);
        break;
      case "submission_settled":
        log(
          `settled ${where} ${v(event.payload.status)}` +
            (event.payload.errorCode ? ` ${v(event.payload.errorCode)}` : "") +
            (event.payload.error ? `: ${v(event.payload.error)}` : "") +
            (event.payload.usage ? ` (${event.payload.usage.totalTokens} tokens${event.payload.cost ? `, $${event.payload.cost.total.toFixed(4)}` : ""})` : ""),
        );
        break;
    }
  };
}

/**
 * An interceptor that logs the duration and outcome of every attempt, operation, model turn and
 * tool call (`debug turn sub=… 12.3ms ok`). Verbose: `npm start` installs it for `LOG_LEVEL=debug`.
 */
export function consoleTimingInterceptor(options: ConsoleLogOptions = {}): Interceptor {
  const log = lineWriter(options);
  return async (info, next) => {
    const started = performance.now();
    let outcome = "ok";
    try {
      await next();
    } catch (err) {
      outcome = `error: ${v(err instanceof Error ? err.message : String(err))}`;
      throw err;
    } finally {
      const what = v(info.kind + (info.operation ? `:${info.operation}` : "") + (info.toolName ? `:${info.toolName}` : ""));
      const ms = (performance.now() - started).toFixed(1);
      log(`debug ${what} sub=${v(info.correlation.submissionId ?? "-")} ${ms}ms ${outcome}`);
    }
  };
}
