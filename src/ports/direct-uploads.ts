/**
 * Direct uploads: large attachments go from the client straight to blob storage (S3, with a
 * presigned POST), not through the HTTP function (whose request payload Lambda caps at 6 MB). The
 * runtime hands out an upload for a declared `{digest, mediaType, size}`, the client posts the
 * bytes to it, and only the completion, which reads the object back and checks it against its
 * digest and type, makes it an attachment a dispatch may reference.
 */
import type { AttachmentRef } from "../protocol/records.ts";

/** What a client declares before it uploads. */
export interface DirectUploadRequest {
  /** `sha256:<64 hex>` of the bytes it will send. */
  digest: string;
  mediaType: string;
  size: number;
}

/** Where and how to send the bytes: an HTML-form-style POST of `fields`, then the file as `file`. */
export interface DirectUpload {
  /** Names the upload in `POST /attachments/uploads/:uploadId/complete`. */
  uploadId: string;
  /** The form's action (the bucket's endpoint). */
  url: string;
  /** Form fields to send, in order, before the file (`key`, `Content-Type`, the policy, its signature, …). */
  fields: Record<string, string>;
  /** RFC 3339: the upload must start before this. */
  expiresAt: string;
}

/** What a completion answers: the attachment, and whether this call checked its bytes. */
export interface CompletedUpload {
  ref: AttachmentRef;
  /**
   * True when this call read the uploaded object and checked it; false when it answered from an
   * earlier completion (the staged object is gone). Only a checked upload makes its caller an
   * uploader (ADR 0046): anyone may name an upload id of a digest it learned.
   */
  verified: boolean;
}

/**
 * Blob storage that takes uploads itself. `checkContent` is the attachment policy's check of the
 * bytes against their type (`contentProblem`): a message refuses them.
 */
export interface DirectUploads {
  /** An upload for exactly these bytes (the policy's type and size checks are the caller's). */
  create(request: DirectUploadRequest): Promise<DirectUpload>;
  /**
   * Reads the uploaded object, checks its size, digest and content, and stores it as the
   * attachment of that digest (content-addressed like every blob). Idempotent: a completed
   * upload answers its ref again. `UploadNotFound` when nothing was uploaded under the id;
   * `InvalidAttachment` when the bytes are not what was declared (the object is deleted).
   */
  complete(uploadId: string, checkContent: (mediaType: string, data: Uint8Array) => string | undefined): Promise<CompletedUpload>;
}
