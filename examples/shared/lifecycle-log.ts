import type { HarnessEvent, Interceptor } from "../../src/ports/observer.ts";
import { sessionKeyString } from "../../src/ports/submission.ts";
import { log } from "./settings.ts";

/** One line per lifecycle event worth a human's attention (the same lines as `npm start`). */
export function lifecycleObserver(event: HarnessEvent): void {
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
    case "submission_settled":
      log(
        `settled ${where} ${event.payload.status}` +
          (event.payload.errorCode ? ` ${event.payload.errorCode}` : "") +
          (event.payload.error ? `: ${event.payload.error}` : ""),
      );
      break;
  }
}

/** Debug timing of every attempt, operation, model turn and tool call. */
export async function timingInterceptor(...[info, next]: Parameters<Interceptor>): Promise<void> {
  const started = performance.now();
  let outcome = "ok";
  try {
    await next();
  } catch (err) {
    outcome = `error: ${err instanceof Error ? err.message : String(err)}`;
    throw err;
  } finally {
    const what = info.kind + (info.operation ? `:${info.operation}` : "") + (info.toolName ? `:${info.toolName}` : "");
    log(`debug ${what} sub=${info.correlation.submissionId ?? "-"} ${(performance.now() - started).toFixed(1)}ms ${outcome}`);
  }
}
