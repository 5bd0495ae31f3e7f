/** Attachments in the SQLite store: content-addressed blobs, the first media type kept. */
import { contentDigest } from "../conversation/content-digest.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { AttachmentNotFound } from "../errors.ts";
import type { SqliteDatabase } from "./database.ts";

export class SqliteAttachments {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async putAttachment(mediaType: string, data: Uint8Array): Promise<AttachmentRef> {
    const digest = contentDigest(data);
    return this.#db.write(() => {
      this.#db.sql.insertAttachment.run(digest, mediaType, data.byteLength, data);
      // Identical bytes keep the first ref (its media type), so every put of them agrees with get.
      return attachmentRefFromRow(this.#db.sql.attachmentRef.get(digest)!);
    });
  }

  async getAttachment(digest: string): Promise<{ ref: AttachmentRef; data: Uint8Array }> {
    const row = this.#db.sql.getAttachment.get(digest);
    if (!row) throw new AttachmentNotFound(digest);
    return { ref: attachmentRefFromRow(row), data: row.data as Uint8Array };
  }

  async getAttachmentRef(digest: string): Promise<AttachmentRef> {
    const row = this.#db.sql.attachmentRef.get(digest);
    if (!row) throw new AttachmentNotFound(digest);
    return attachmentRefFromRow(row);
  }

  async addAttachmentUploader(digest: string, uploader: string): Promise<void> {
    await this.#db.write(() => {
      this.#db.sql.insertAttachmentUploader.run(digest, uploader);
    });
  }

  async isAttachmentUploader(digest: string, uploader: string): Promise<boolean> {
    return this.#db.sql.isAttachmentUploader.get(digest, uploader) !== undefined;
  }
}

function attachmentRefFromRow(row: Record<string, unknown>): AttachmentRef {
  return { digest: row.digest as string, mediaType: row.media_type as string, size: row.size as number };
}
