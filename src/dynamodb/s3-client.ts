/**
 * The S3 side of the DynamoDB store: the default client and the object calls the blob store
 * makes. Kept apart from everything the store loads at once, and loaded by the blob store on its
 * first call (a dynamic import): the S3 SDK (~130 KB minified with its checksum and XML code) is
 * then no part of a Lambda cold start, and most invocations never touch the bucket (only
 * attachments, payloads over the spill threshold and log checkpoints live there).
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { S3_REQUEST_TIMEOUT_MS, timeouts } from "./clients.ts";
import { harnessRetryStrategy, type RetryPolicy } from "./retry.ts";

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

/** Creates the bucket (tests, the local cloud); quiet when it already exists and is ours. */
export async function createHarnessBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw error;
  }
}

/** An object's bytes and type, or undefined when there is no such object. */
export async function getObject(s3: S3Client, bucket: string, key: string): Promise<{ data: Uint8Array; contentType?: string } | undefined> {
  try {
    const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { data: await res.Body!.transformToByteArray(), contentType: res.ContentType };
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** An object's type and size (a HEAD, no bytes), or undefined when there is no such object. */
export async function headObject(s3: S3Client, bucket: string, key: string): Promise<{ contentType?: string; size: number } | undefined> {
  try {
    const res = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return { contentType: res.ContentType, size: res.ContentLength ?? 0 };
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function putObject(s3: S3Client, bucket: string, key: string, body: Uint8Array, contentType?: string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...(contentType ? { ContentType: contentType } : {}) }));
}

/** Deletes the object at `key` (S3 answers a missing key as deleted too). */
export async function deleteObject(s3: S3Client, bucket: string, key: string): Promise<void> {
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === "NoSuchKey" || e.name === "NotFound" || e.$metadata?.httpStatusCode === 404;
}
