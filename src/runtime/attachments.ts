/**
 * The runtime's attachment uploads (ADR 0034): bytes checked against the attachment policy and
 * stored content-addressed (`POST /attachments`), and direct uploads for large files where the
 * blob storage takes them itself (`POST /attachments/uploads`, S3 on AWS).
 */
import { InvalidAttachment, UploadNotFound, UploadsUnsupported } from "../errors.ts";
import type { DirectUpload, DirectUploads } from "../ports/direct-uploads.ts";
import {
  attachmentProblem,
  declaredProblem,
  normalizeMediaType,
  type AttachmentPolicy,
} from "../protocol/attachment-policy.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import type { AttachmentStore } from "../store/store.ts";

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const UPLOAD_ID = /^[0-9a-f]{16}-[0-9a-f]{64}$/;

/** An attachment to store: its bytes and the `Content-Type` they came with. */
export interface AttachmentUpload {
  /** A media type, parameters allowed (`text/plain; charset=utf-8`). */
  contentType: string;
  data: Uint8Array;
  /**
   * Who uploads it (a principal id, ADR 0046), recorded beside the bytes so it may read them back
   * by digest. Set by `Runtime.as(principal)`; absent without authentication.
   */
  uploadedBy?: string;
}

/** What a client declares to upload directly (`POST /attachments/uploads`). */
export interface DirectUploadDeclaration {
  digest: string;
  mediaType: string;
  size: number;
}

/** The attachment operations of a runtime, over its store, policy and (optional) direct uploads. */
export class RuntimeAttachments {
  readonly policy: AttachmentPolicy;
  readonly #store: Pick<AttachmentStore, "putAttachment" | "addAttachmentUploader">;
  readonly #uploads: DirectUploads | undefined;

  constructor(store: Pick<AttachmentStore, "putAttachment" | "addAttachmentUploader">, policy: AttachmentPolicy, uploads?: DirectUploads) {
    this.#store = store;
    this.policy = policy;
    this.#uploads = uploads;
  }

  /** Whether large files can go straight to blob storage here. */
  get directUploads(): boolean {
    return this.#uploads !== undefined;
  }

  /** Checks and stores the bytes; `InvalidAttachment` (nothing stored) when the policy refuses them. */
  async upload(upload: AttachmentUpload): Promise<AttachmentRef> {
    const { mediaType, charset } = normalizeMediaType(typeof upload.contentType === "string" ? upload.contentType : "");
    const problem = attachmentProblem(this.policy, mediaType, upload.data, charset);
    if (problem !== undefined) throw new InvalidAttachment(problem);
    const ref = await this.#store.putAttachment(mediaType, upload.data);
    // After the bytes: an uploader row never names bytes that are not there.
    if (upload.uploadedBy !== undefined) await this.#store.addAttachmentUploader(ref.digest, upload.uploadedBy);
    return ref;
  }

  /**
   * A direct upload for the declared bytes, after the policy's checks of type and size.
   * `UploadsUnsupported` without direct uploads (then `POST /attachments` takes every size the
   * policy allows).
   */
  async createUpload(declared: DirectUploadDeclaration): Promise<DirectUpload> {
    if (this.#uploads === undefined) throw new UploadsUnsupported(Math.max(...Object.values(this.policy)));
    if (typeof declared.digest !== "string" || !DIGEST.test(declared.digest)) {
      throw new InvalidAttachment(`digest must be "sha256:<64 lowercase hex>", got ${JSON.stringify(declared.digest)}`);
    }
    const { mediaType } = normalizeMediaType(typeof declared.mediaType === "string" ? declared.mediaType : "");
    const problem = declaredProblem(this.policy, mediaType, declared.size);
    if (problem !== undefined) throw new InvalidAttachment(problem);
    return this.#uploads.create({ digest: declared.digest, mediaType, size: declared.size });
  }

  /**
   * Verifies a direct upload and makes it an attachment (see `DirectUploads.complete`);
   * `uploadedBy` becomes an uploader only when this call checked the bytes it sent.
   */
  async completeUpload(uploadId: string, uploadedBy?: string): Promise<AttachmentRef> {
    if (this.#uploads === undefined) throw new UploadsUnsupported(Math.max(...Object.values(this.policy)));
    if (typeof uploadId !== "string" || !UPLOAD_ID.test(uploadId)) throw new UploadNotFound(String(uploadId));
    const { ref, verified } = await this.#uploads.complete(uploadId, (mediaType, data) => attachmentProblem(this.policy, mediaType, data));
    if (verified && uploadedBy !== undefined) await this.#store.addAttachmentUploader(ref.digest, uploadedBy);
    return ref;
  }
}
