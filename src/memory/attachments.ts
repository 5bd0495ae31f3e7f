import { contentDigest } from "../conversation/content-digest.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { AttachmentNotFound } from "../errors.ts";

/** The memory store's content-addressed attachments (copies in and out: callers own their bytes). */
export class MemoryAttachments {
  readonly #byDigest = new Map<string, { ref: AttachmentRef; data: Uint8Array }>();
  /** Who uploaded what (ADR 0046): digest → uploaders. */
  readonly #uploaders = new Map<string, Set<string>>();

  put(mediaType: string, data: Uint8Array): AttachmentRef {
    const digest = contentDigest(data);
    const existing = this.#byDigest.get(digest);
    if (existing) return { ...existing.ref };
    const ref = Object.freeze({ digest, mediaType, size: data.byteLength });
    this.#byDigest.set(digest, { ref, data: new Uint8Array(data) });
    return { ...ref };
  }

  get(digest: string): { ref: AttachmentRef; data: Uint8Array } {
    const stored = this.#byDigest.get(digest);
    if (!stored) throw new AttachmentNotFound(digest);
    return { ref: { ...stored.ref }, data: new Uint8Array(stored.data) };
  }

  addUploader(digest: string, uploader: string): void {
    let uploaders = this.#uploaders.get(digest);
    if (uploaders === undefined) this.#uploaders.set(digest, (uploaders = new Set()));
    uploaders.add(uploader);
  }

  isUploader(digest: string, uploader: string): boolean {
    return this.#uploaders.get(digest)?.has(uploader) ?? false;
  }

  delete(digest: string): void {
    this.#byDigest.delete(digest);
  }

  ref(digest: string): AttachmentRef {
    const stored = this.#byDigest.get(digest);
    if (!stored) throw new AttachmentNotFound(digest);
    return { ...stored.ref };
  }
}
