/**
 * Lambda's quotas that the local function host enforces where the real service would refuse a
 * request (docs/reference/limits.md, "What the local cloud enforces"): the synchronous payload
 * (6 MB each way), a RESPONSE_STREAM function URL's response (200 MB), the environment (4 KB),
 * and the function timeout on a function URL request. The refusals are worded as Lambda words
 * them, so what a client or a test sees here is what it would see on AWS.
 */
/** Request (the event) and buffered response of a synchronous invocation: 6 MB (6,291,456 bytes). */
export const LAMBDA_SYNC_PAYLOAD_MAX_BYTES = 6 * 1024 * 1024;
/**
 * A buffered response may be 100 bytes more than the request (`maximum allowed payload size
 * (6291556 bytes)` in Lambda's refusal).
 */
export const LAMBDA_SYNC_RESPONSE_MAX_BYTES = LAMBDA_SYNC_PAYLOAD_MAX_BYTES + 100;
/** A RESPONSE_STREAM invocation's response: 200 MB (raised from 20 MB in 2025). */
export const LAMBDA_STREAMED_RESPONSE_MAX_BYTES = 200 * 1024 * 1024;
/**
 * A function's environment, as compact JSON: 4 KB (the construct's `LAMBDA_ENVIRONMENT_MAX_BYTES`,
 * not imported: that module loads aws-cdk-lib, which no function host needs).
 */
export const LAMBDA_ENVIRONMENT_MAX_BYTES = 4096;

/**
 * Variables the local cloud gives every container that a deployed function does not carry in its
 * own environment: Lambda's reserved ones (set by the runtime, not counted) and the emulator
 * endpoints (local only).
 */
const NOT_COUNTED = new Set([
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_LAMBDA_FUNCTION_NAME",
  "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
  "AWS_ENDPOINT_URL_DYNAMODB",
  "AWS_ENDPOINT_URL_SQS",
  "AWS_ENDPOINT_URL_S3",
  "PATH",
  "HOME",
  "TZ",
  "NODE_OPTIONS",
]);

/** Lambda refused something (`code` is the exception or error type it reports). */
export class LambdaLimitError extends Error {
  readonly code: string;
  readonly statusCode: number;
  constructor(code: string, statusCode: number, message: string) {
    super(message);
    this.name = code;
    this.code = code;
    this.statusCode = statusCode;
  }
}

/** The environment as Lambda measures it: the function's own variables as compact JSON. */
export function measuredEnvironment(env: Record<string, string>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(env).filter(([name]) => !NOT_COUNTED.has(name))));
}

/**
 * Refuses an environment Lambda would refuse at CreateFunction/UpdateFunctionConfiguration, with
 * its `InvalidParameterValueException` wording.
 */
export function checkFunctionEnvironment(functionName: string, env: Record<string, string>): void {
  const measured = measuredEnvironment(env);
  const bytes = Buffer.byteLength(measured, "utf8");
  if (bytes <= LAMBDA_ENVIRONMENT_MAX_BYTES) return;
  throw new LambdaLimitError(
    "InvalidParameterValueException",
    400,
    `${functionName}: Lambda was unable to configure your environment variables because the environment variables you have provided exceeded the 4KB limit. String measured: ${measured} (${bytes} bytes)`,
  );
}

/** Refuses a synchronous invocation whose event (as JSON) is over 6 MB, as Lambda's Invoke does. */
export function checkInvokePayload(payload: string): void {
  const bytes = Buffer.byteLength(payload, "utf8");
  if (bytes > LAMBDA_SYNC_PAYLOAD_MAX_BYTES) throw requestTooLarge();
}

/** Lambda's answer to an invocation request over 6 MB (HTTP 413). */
export function requestTooLarge(): LambdaLimitError {
  return new LambdaLimitError(
    "RequestEntityTooLargeException",
    413,
    `Request must be smaller than ${LAMBDA_SYNC_PAYLOAD_MAX_BYTES} bytes for the InvokeFunction operation`,
  );
}

/** Refuses a buffered result over the response limit, as Lambda reports it (a function error). */
export function checkInvokeResult(result: unknown): void {
  const bytes = Buffer.byteLength(JSON.stringify(result ?? null), "utf8");
  if (bytes <= LAMBDA_SYNC_RESPONSE_MAX_BYTES) return;
  throw new LambdaLimitError(
    "Function.ResponseSizeTooLarge",
    502,
    `Response payload size exceeded maximum allowed payload size (${LAMBDA_SYNC_RESPONSE_MAX_BYTES} bytes).`,
  );
}
