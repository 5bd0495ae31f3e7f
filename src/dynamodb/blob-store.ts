/**
 * Content-addressed bytes in S3: attachments, and the record payloads and inputs too large for
 * a DynamoDB item (spill). One key scheme for both, `blobs/sha256/<hex>`, so identical bytes
 * are stored once whoever wrote them. Objects are written before any item that references
 * them, and never rewritten, so a reader that finds a reference always finds the bytes.
 * Log checkpoints (ADR 0018) are the exception: one object per conversation under
 * `checkpoints/`, rewritten in place, each describing itself (a reader trusts its content only).
 *
 * The S3 SDK is loaded on the first call (`s3-client.ts`), not with the store.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { contentDigest } from "../conversation/content-digest.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { AttachmentNotFound } from "../errors.ts";

const DIGEST = /^sha256:([0-9a-f]{64})$/;

type S3Module = typeof import("./s3-client.ts");

export class BlobStore {
  readonly #bucket: string;
  readonly #given: S3Client | undefined;
  #loaded: Promise<{ s3: S3Module; client: S3Client }> | undefined;
  /** The client this store made itself (destroyed by `close`). */
  #owned: S3Client | undefined;

  /** `s3`: the client to use; default `createS3Client()`, made on first use and closed by {@link close}. */
  constructor(bucket: string, s3?: S3Client) {
    this.#bucket = bucket;
    this.#given = s3;
  }

  #s3(): Promise<{ s3: S3Module; client: S3Client }> {
    this.#loaded ??= import("./s3-client.ts").then((s3) => {
      const client = this.#given ?? (this.#owned = s3.createS3Client());
      return { s3, client };
    });
    // A failed load (a missing dependency) is tried again by the next call.
    this.#loaded.catch(() => (this.#loaded = undefined));
    return this.#loaded;
  }

  /** Stores `data` under its digest; identical bytes keep their first media type. */
  async put(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    const digest = contentDigest(data);
    const existing = await this.#head(digest);
    if (existing) return existing;
    const { s3, client } = await this.#s3();
    await s3.putObject(client, this.#bucket, objectKey(digest), data, mediaType);
    return { digest, mediaType, size: data.byteLength };
  }

  /** The bytes of `digest`, or `AttachmentNotFound`. */
  async get(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    if (!DIGEST.test(digest)) throw new AttachmentNotFound(digest);
    const { s3, client } = await this.#s3();
    const object = await s3.getObject(client, this.#bucket, objectKey(digest));
    if (!object) throw new AttachmentNotFound(digest);
    return { ref: { digest, mediaType: object.contentType ?? "application/octet-stream", size: object.data.byteLength }, data: object.data };
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
    const { s3, client } = await this.#s3();
    await s3.putObject(client, this.#bucket, key, data);
  }

  /** The bytes at `key`, or undefined when there is no such object. */
  async getKeyed(key: string): Promise<Uint8Array | undefined> {
    const { s3, client } = await this.#s3();
    return (await s3.getObject(client, this.#bucket, key))?.data;
  }

  /** Destroys the client this store made (a given one is left open), also one still being made. */
  close(): void {
    const destroy = () => {
      this.#owned?.destroy();
      this.#owned = undefined;
    };
    destroy();
    this.#loaded?.then(destroy, () => {});
  }

  /** Deletes the blob of `digest` (quiet when it is gone already). */
  async delete(digest: string): Promise<void> {
    if (!DIGEST.test(digest)) return;
    await this.deleteKeyed(objectKey(digest));
  }

  /** Deletes the object at `key` (S3 answers a missing key as deleted too). */
  async deleteKeyed(key: string): Promise<void> {
    const { s3, client } = await this.#s3();
    await s3.deleteObject(client, this.#bucket, key);
  }

  async #head(digest: string): Promise<AttachmentRef | undefined> {
    const { s3, client } = await this.#s3();
    const head = await s3.headObject(client, this.#bucket, objectKey(digest));
    return head && { digest, mediaType: head.contentType ?? "application/octet-stream", size: head.size };
  }
}

function objectKey(digest: string): string {
  return `blobs/sha256/${digest.slice("sha256:".length)}`;
}
