/**
 * What a function URL refuses or cuts, applied by the local one (`awslambda-local.ts`): an event
 * over the 6 MB invocation payload is answered 413 before the handler runs; a request still
 * running at the function timeout is ended (502 before its head, a cut connection after it, as a
 * timed-out streaming invocation ends); a RESPONSE_STREAM response is cut once it passes its
 * maximum (200 MB on Lambda). Lambda would also reset the execution environment on a timeout; one
 * local container serves every request at once, so the handler is left running instead.
 */
import type http from "node:http";
import { checkInvokePayload, LAMBDA_STREAMED_RESPONSE_MAX_BYTES, LambdaLimitError } from "./lambda-limits.ts";

export interface FunctionUrlLimits {
  /** The function timeout, ms. */
  timeoutMs: number;
  /** Largest streamed response (body bytes); default Lambda's 200 MB. */
  streamedResponseMaxBytes?: number;
  /** Called with what was cut, for the function's log. */
  log?: (line: string) => void;
}

/**
 * Answers 413 as a function URL does when the event (as JSON) is over the invocation payload
 * limit; true when it did (the handler must not run).
 */
export function refuseOversizedEvent(event: unknown, res: http.ServerResponse): boolean {
  try {
    checkInvokePayload(JSON.stringify(event));
    return false;
  } catch (err) {
    if (!(err instanceof LambdaLimitError)) throw err;
    res.writeHead(err.statusCode, { "content-type": "application/json", "x-amzn-errortype": err.code });
    res.end(JSON.stringify({ Message: err.message }));
    return true;
  }
}

/**
 * Bounds one request's response by the function timeout and the streamed-response maximum;
 * returns the function that releases the guard when the response ended by itself.
 */
export function guardResponse(res: http.ServerResponse, limits: FunctionUrlLimits): () => void {
  const max = limits.streamedResponseMaxBytes ?? LAMBDA_STREAMED_RESPONSE_MAX_BYTES;
  let written = 0;
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  let cut = false;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    // A writer waiting on its callback must not hang on a cut response (its handler would never end).
    const callback = rest.find((a): a is () => void => typeof a === "function");
    if (cut) {
      if (callback) queueMicrotask(callback);
      return false;
    }
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
    if (written + bytes.length > max) {
      // The client gets the response up to the maximum, then the connection ends.
      cut = true;
      limits.log?.(`function URL: response stream over its ${max} bytes, cut`);
      write(bytes.subarray(0, max - written), () => {
        res.destroy();
        callback?.();
      });
      written = max;
      return false;
    }
    written += bytes.length;
    return write(chunk, ...rest);
  }) as typeof res.write;
  const timer = setTimeout(() => {
    limits.log?.(`Task timed out after ${(limits.timeoutMs / 1000).toFixed(2)} seconds (function URL request ended)`);
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "application/json" });
      res.end('{"Message":"Internal Server Error"}');
    } else {
      res.destroy();
    }
  }, limits.timeoutMs);
  timer.unref();
  const release = () => clearTimeout(timer);
  res.once("close", release);
  return release;
}
