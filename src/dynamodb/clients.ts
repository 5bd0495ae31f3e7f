/**
 * The default DynamoDB client of the store. In Lambda no `AWS_ENDPOINT_URL_*` is set and it is a
 * plain client; against local emulators the endpoint comes from the environment. (The S3 client
 * is in `s3-client.ts`, loaded only when the store first touches the bucket.)
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { harnessRetryStrategy, type RetryPolicy } from "./retry.ts";

/**
 * Per-try request timeouts. The HTTP handler sets none by default, so a response that never
 * arrives (a peer that accepts and goes silent) would hold the call, and the session, forever
 * instead of being retried; and `requestTimeout` alone only logs a warning unless
 * `throwOnRequestTimeout` is set too. DynamoDB answers in milliseconds; S3 moves payloads of up
 * to a few MB (spilled records, attachments).
 */
export const DYNAMO_REQUEST_TIMEOUT_MS = 5_000;
export const S3_REQUEST_TIMEOUT_MS = 30_000;
const CONNECTION_TIMEOUT_MS = 3_000;

/** A DynamoDB client with the store's retry policy (throttling, network errors and timeouts back off). */
export function createDynamoClient(config: DynamoDBClientConfig = {}, retry?: RetryPolicy): DynamoDBClient {
  return new DynamoDBClient({
    retryStrategy: harnessRetryStrategy(retry),
    requestHandler: timeouts(retry?.requestTimeoutMs ?? DYNAMO_REQUEST_TIMEOUT_MS),
    ...config,
  });
}

/** Options of the SDK's Node HTTP handler that make a silent peer an error (and so a retry). */
export function timeouts(requestTimeout: number) {
  return { requestTimeout, connectionTimeout: Math.min(CONNECTION_TIMEOUT_MS, requestTimeout), throwOnRequestTimeout: true };
}
