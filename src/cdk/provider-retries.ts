/**
 * Provider SDK retries on the functions that run agents. pi-ai's Bedrock client is the AWS SDK's,
 * which retries a failed request up to 3 attempts by itself, under the harness's own attempt
 * budget and backoff (a submission would then cost up to 3× the requests its budget says). The
 * only lever pi-ai leaves is the SDK's process-wide `AWS_MAX_ATTEMPTS`, so the construct sets it
 * where it knows Bedrock is called, documented and overridable, never silently elsewhere (ADR 0019).
 * The harness's own AWS clients pin their retries, so the variable does not reach them.
 */
import type { HarnessBedrockOptions } from "./harness-props.ts";

/** What `bedrock.sdkMaxAttempts` defaults to: one request per harness attempt. */
export const DEFAULT_BEDROCK_SDK_MAX_ATTEMPTS = 1;

/** The environment a function that runs agents gets for the provider SDKs' retries. */
export function providerSdkEnv(bedrock: boolean | HarnessBedrockOptions | undefined): Record<string, string> {
  if (!bedrock) return {};
  const attempts = (bedrock === true ? undefined : bedrock.sdkMaxAttempts) ?? DEFAULT_BEDROCK_SDK_MAX_ATTEMPTS;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new Error(`Harness: bedrock.sdkMaxAttempts must be a positive integer, got ${String(attempts)}`);
  }
  return { AWS_MAX_ATTEMPTS: String(attempts) };
}
