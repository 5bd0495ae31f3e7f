/**
 * Default SDK clients of the DynamoDB store. In Lambda no `AWS_ENDPOINT_URL_*` is set and these
 * are plain clients; against local emulators the endpoint comes from the environment, and S3
 * then needs path-style addressing (virtual hosts of a local endpoint do not resolve).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
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

/** An S3 client; path-style when `AWS_ENDPOINT_URL_S3` (or `config.endpoint`) points elsewhere. */
export function createS3Client(config: S3ClientConfig = {}, retry?: RetryPolicy): S3Client {
  const endpoint = config.endpoint ?? process.env.AWS_ENDPOINT_URL_S3;
  return new S3Client({
    retryStrategy: harnessRetryStrategy(retry),
    requestHandler: timeouts(retry?.requestTimeoutMs ?? S3_REQUEST_TIMEOUT_MS),
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...config,
  });
}

/** Options of the SDK's Node HTTP handler that make a silent peer an error (and so a retry). */
function timeouts(requestTimeout: number) {
  return { requestTimeout, connectionTimeout: Math.min(CONNECTION_TIMEOUT_MS, requestTimeout), throwOnRequestTimeout: true };
}
