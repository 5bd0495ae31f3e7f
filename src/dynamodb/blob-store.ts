/**
 * Content-addressed bytes in S3: attachments, and the record payloads and inputs too large for
 * a DynamoDB item (spill). One key scheme for both, `blobs/sha256/<hex>`, so identical bytes
 * are stored once whoever wrote them. Objects are written before any item that references
 * them, and never rewritten, so a reader that finds a reference always finds the bytes.
 * Log checkpoints (ADR 0018) are the exception: one object per conversation under
 * `checkpoints/`, rewritten in place, each describing itself (a reader trusts its content only).
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { contentDigest } from "../conversation/content-digest.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { AttachmentNotFound } from "../errors.ts";

const DIGEST = /^sha256:([0-9a-f]{64})$/;

export class BlobStore {
  readonly #s3: S3Client;
  readonly #bucket: string;

  constructor(s3: S3Client, bucket: string) {
    this.#s3 = s3;
    this.#bucket = bucket;
  }

  /** Stores `data` under its digest; identical bytes keep their first media type. */
  async put(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    const digest = contentDigest(data);
    const existing = await this.#head(digest);
    if (existing) return existing;
    await this.#s3.send(
      new PutObjectCommand({ Bucket: this.#bucket, Key: objectKey(digest), Body: data, ContentType: mediaType }),
    );
    return { digest, mediaType, size: data.byteLength };
  }

  /** The bytes of `digest`, or `AttachmentNotFound`. */
  async get(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    if (!DIGEST.test(digest)) throw new AttachmentNotFound(digest);
    try {
      const res = await this.#s3.send(new GetObjectCommand({ Bucket: this.#bucket, Key: objectKey(digest) }));
      const data = await res.Body!.transformToByteArray();
      return { ref: { digest, mediaType: res.ContentType ?? "application/octet-stream", size: data.byteLength }, data };
    } catch (error) {
      if (isNotFound(error)) throw new AttachmentNotFound(digest);
      throw error;
    }
  }

  /** The ref of `digest` from the object's metadata (a HEAD, no bytes), or `AttachmentNotFound`. */
  async ref(digest: string): Promise<AttachmentRef> {
    const ref = DIGEST.test(digest) ? await this.#head(digest) : undefined;
    if (!ref) throw new AttachmentNotFound(digest);
    return ref;
  }

  /** Spills a JSON text; returns its digest. */
  async putText(text: string): Promise<string> {
    return (await this.put("application/json", Buffer.from(text, "utf8"))).digest;
  }

  /** The text a spill reference points to. A missing object here is corruption, not absence. */
  async getText(digest: string): Promise<string> {
    try {
      return Buffer.from((await this.get(digest)).data).toString("utf8");
    } catch (error) {
      if (error instanceof AttachmentNotFound) {
        throw new Error(`spilled payload ${digest} is missing from bucket ${this.#bucket}`, { cause: error });
      }
      throw error;
    }
  }

  /** Writes the object at `key` (outside the content-addressed keys: `checkpoints/…`). */
  async putKeyed(key: string, data: Uint8Array): Promise<void> {
    await this.#s3.send(new PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: data }));
  }

  /** The bytes at `key`, or undefined when there is no such object. */
  async getKeyed(key: string): Promise<Uint8Array | undefined> {
    try {
      const res = await this.#s3.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }));
      return await res.Body!.transformToByteArray();
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Deletes the blob of `digest` (quiet when it is gone already). */
  async delete(digest: string): Promise<void> {
    if (!DIGEST.test(digest)) return;
    await this.deleteKeyed(objectKey(digest));
  }

  /** Deletes the object at `key` (S3 answers a missing key as deleted too). */
  async deleteKeyed(key: string): Promise<void> {
    await this.#s3.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key }));
  }

  async #head(digest: string): Promise<AttachmentRef | undefined> {
    try {
      const res = await this.#s3.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: objectKey(digest) }));
      return { digest, mediaType: res.ContentType ?? "application/octet-stream", size: res.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }
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

function objectKey(digest: string): string {
  return `blobs/sha256/${digest.slice("sha256:".length)}`;
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === "NoSuchKey" || e.name === "NotFound" || e.$metadata?.httpStatusCode === 404;
}
