import type { HarnessEvent, Interceptor, Observer } from "../ports/observer.ts";
import { sessionKeyString } from "../store/submission.ts";

/** Where and how {@link consoleObserver} and {@link consoleTimingInterceptor} write. */
export interface ConsoleLogOptions {
  /** Receives each line (default `console.log`). */
  write?: (line: string) => void;
  /** Prefix each line with the wall-clock time as RFC 3339 (default true). */
  timestamps?: boolean;
}

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
    const where = `${sessionKeyString(c.sessionKey)} sub=${c.submissionId ?? "-"}`;
    switch (event.type) {
      case "submission_admitted":
        log(`admitted ${where}${event.replayed ? " (replayed, idempotent)" : ""}`);
        break;
      case "submission_claimed":
        log(`claimed ${where} attempt=${c.attemptId ?? "-"} (#${event.attemptCount})`);
        break;
      case "tool_call_ended":
        log(`tool finished ${where} ${event.toolName}${event.isError ? " (error)" : ""}`);
        break;
      case "recovery":
        log(`recovery ${where} ${event.decision}: ${event.detail}`);
        break;
      case "compaction":
        log(`compacted ${where} ${event.reason}: ~${event.summarizedTokens} tokens summarized, ~${event.keptTokens} kept`);
        break;
      case "submission_settled":
        log(
          `settled ${where} ${event.payload.status}` +
            (event.payload.errorCode ? ` ${event.payload.errorCode}` : "") +
            (event.payload.error ? `: ${event.payload.error}` : "") +
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
      outcome = `error: ${err instanceof Error ? err.message : String(err)}`;
      throw err;
    } finally {
      const what = info.kind + (info.operation ? `:${info.operation}` : "") + (info.toolName ? `:${info.toolName}` : "");
      const ms = (performance.now() - started).toFixed(1);
      log(`debug ${what} sub=${info.correlation.submissionId ?? "-"} ${ms}ms ${outcome}`);
    }
  };
}
