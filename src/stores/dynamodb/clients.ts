/**
 * Default SDK clients of the DynamoDB store. In Lambda no `AWS_ENDPOINT_URL_*` is set and these
 * are plain clients; against local emulators the endpoint comes from the environment, and S3
 * then needs path-style addressing (virtual hosts of a local endpoint do not resolve).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { harnessRetryStrategy, type RetryPolicy } from "./retry.ts";

/** A DynamoDB client with the store's retry policy (throttling and network errors back off). */
export function createDynamoClient(config: DynamoDBClientConfig = {}, retry?: RetryPolicy): DynamoDBClient {
  return new DynamoDBClient({ retryStrategy: harnessRetryStrategy(retry), ...config });
}

/** An S3 client; path-style when `AWS_ENDPOINT_URL_S3` (or `config.endpoint`) points elsewhere. */
export function createS3Client(config: S3ClientConfig = {}, retry?: RetryPolicy): S3Client {
  const endpoint = config.endpoint ?? process.env.AWS_ENDPOINT_URL_S3;
  return new S3Client({
    retryStrategy: harnessRetryStrategy(retry),
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...config,
  });
}
