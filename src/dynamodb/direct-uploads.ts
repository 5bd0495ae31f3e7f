/**
 * Direct uploads into the harness bucket (ADR 0034): a presigned POST (SigV4 POST policy) that
 * lets a client put exactly the declared bytes under `uploads/<uploadId>`, and the completion that
 * reads them back, checks size, digest and content, and stores them content-addressed under
 * `blobs/sha256/<hex>` like every attachment. Until then nothing references the object: a
 * dispatch naming the digest is refused (`attachment_not_found`), and the bucket's lifecycle rule
 * removes abandoned uploads after a day.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { InvalidAttachment, UploadNotFound } from "../errors.ts";
import type { CompletedUpload, DirectUpload, DirectUploadRequest, DirectUploads } from "../ports/direct-uploads.ts";

/** Key prefix of uploads not yet completed (the CDK construct expires it after a day). */
export const UPLOADS_PREFIX = "uploads/";

/** Options of {@link s3DirectUploads}. */
export interface S3DirectUploadsOptions {
  s3: S3Client;
  bucket: string;
  /** How long the presigned POST stays valid. Default 15 min. */
  expiresInMs?: number;
  /**
   * The form's action. Default: `AWS_ENDPOINT_URL_S3` path-style (local emulators) or the
   * bucket's virtual-host endpoint in the client's region.
   */
  endpoint?: string;
  now?: () => number;
}

const DIGEST_HEX = /^sha256:([0-9a-f]{64})$/;
/** `<16 hex random>-<64 hex digest>`: the digest in the id lets a repeated completion answer from the blob. */
const UPLOAD_ID = /^([0-9a-f]{16})-([0-9a-f]{64})$/;

/** Direct uploads over S3 (see the module comment). */
export function s3DirectUploads(options: S3DirectUploadsOptions): DirectUploads {
  const { s3, bucket } = options;
  const now = options.now ?? Date.now;
  const expiresInMs = options.expiresInMs ?? 15 * 60_000;

  return {
    async create(request: DirectUploadRequest): Promise<DirectUpload> {
      const hex = DIGEST_HEX.exec(request.digest)?.[1];
      if (hex === undefined) throw new InvalidAttachment(`digest must be "sha256:<64 hex>", got ${JSON.stringify(request.digest)}`);
      const uploadId = `${randomBytes(8).toString("hex")}-${hex}`;
      const credentials = await s3.config.credentials();
      const region = await s3.config.region();
      const at = new Date(now());
      const amzDate = at.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
      const day = amzDate.slice(0, 8);
      const credential = `${credentials.accessKeyId}/${day}/${region}/s3/aws4_request`;
      const fields: Record<string, string> = {
        key: `${UPLOADS_PREFIX}${uploadId}`,
        "Content-Type": request.mediaType,
        "x-amz-meta-digest": request.digest,
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": credential,
        "X-Amz-Date": amzDate,
      };
      if (credentials.sessionToken) fields["X-Amz-Security-Token"] = credentials.sessionToken;
      const expiresAt = new Date(at.getTime() + expiresInMs).toISOString();
      // The policy pins every field and the exact size: S3 refuses any other upload to this key.
      const policy = {
        expiration: expiresAt,
        conditions: [
          { bucket },
          ...Object.entries(fields).map(([name, value]) => ({ [name]: value })),
          ["content-length-range", request.size, request.size],
        ],
      };
      const encoded = Buffer.from(JSON.stringify(policy), "utf8").toString("base64");
      fields.Policy = encoded;
      fields["X-Amz-Signature"] = postPolicySignature(credentials.secretAccessKey, day, region, encoded);
      return { uploadId, url: options.endpoint ?? bucketEndpoint(bucket, region), fields, expiresAt };
    },

    async complete(uploadId, checkContent): Promise<CompletedUpload> {
      const match = UPLOAD_ID.exec(uploadId);
      if (!match) throw new UploadNotFound(uploadId);
      const digest = `sha256:${match[2]}`;
      const key = `${UPLOADS_PREFIX}${uploadId}`;
      let object;
      try {
        object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      } catch (error) {
        if (!isNotFound(error)) throw error;
        // Completed before (the staged object is gone once stored): answer from the blob.
        const done = await head(s3, bucket, blobKey(digest));
        if (done === undefined) throw new UploadNotFound(uploadId);
        return { ref: { digest, mediaType: done.mediaType, size: done.size }, verified: false };
      }
      const data = await object.Body!.transformToByteArray();
      const declared = object.Metadata?.digest;
      const mediaType = object.ContentType ?? "application/octet-stream";
      const actual = `sha256:${createHash("sha256").update(data).digest("hex")}`;
      const problem =
        declared !== digest
          ? `upload ${uploadId} was not made for digest ${digest}`
          : actual !== digest
            ? `uploaded bytes do not match the declared digest ${digest} (they hash to ${actual})`
            : checkContent(mediaType, data);
      if (problem !== undefined) {
        await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
        throw new InvalidAttachment(problem);
      }
      // Identical bytes are stored once and keep their first media type (as BlobStore.put).
      const existing = await head(s3, bucket, blobKey(digest));
      if (existing === undefined) {
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: blobKey(digest), Body: data, ContentType: mediaType }));
      }
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      return { ref: { digest, mediaType: existing?.mediaType ?? mediaType, size: data.byteLength }, verified: true };
    },
  };
}

/** The SigV4 signature of a POST policy: HMAC-SHA256 of the base64 policy with the day's signing key. */
export function postPolicySignature(secretAccessKey: string, day: string, region: string, policyBase64: string): string {
  const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data, "utf8").digest();
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), "s3"), "aws4_request");
  return createHmac("sha256", signingKey).update(policyBase64, "utf8").digest("hex");
}

function bucketEndpoint(bucket: string, region: string): string {
  const local = process.env.AWS_ENDPOINT_URL_S3;
  if (local) return `${local.replace(/\/+$/, "")}/${bucket}`;
  return `https://${bucket}.s3.${region}.amazonaws.com/`;
}

function blobKey(digest: string): string {
  return `blobs/sha256/${digest.slice("sha256:".length)}`;
}

async function head(s3: S3Client, bucket: string, key: string): Promise<{ mediaType: string; size: number } | undefined> {
  try {
    const res = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return { mediaType: res.ContentType ?? "application/octet-stream", size: res.ContentLength ?? 0 };
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === "NoSuchKey" || e.name === "NotFound" || e.$metadata?.httpStatusCode === 404;
}
