import type { AttachmentRef } from "../protocol/records.ts";
import { readJson, refOf } from "./answers.ts";
import { HarnessHttpError } from "./http-error.ts";

/**
 * Files larger than this go through a direct upload where the server offers one (a Lambda
 * function URL takes requests of up to 6 MB, base64 included); smaller ones, and every file where
 * it does not, through `POST /attachments`.
 */
export const DEFAULT_INLINE_UPLOAD_BYTES = 4 * 1024 * 1024;

/** Options of {@link HarnessClient.uploadAttachment}. */
export interface UploadOptions {
  /** Larger files take a direct upload when the server has one. Default {@link DEFAULT_INLINE_UPLOAD_BYTES}. */
  inlineLimit?: number;
  signal?: AbortSignal;
}

type Send = (
  method: "POST",
  url: string,
  init: { body?: unknown; bytes?: { data: Uint8Array; contentType: string }; signal?: AbortSignal },
) => Promise<Response>;

/**
 * The client's `uploadAttachment` over its `send` (headers, signing) and its `fetch` (the direct
 * upload's form goes to blob storage with no harness headers).
 */
export function attachmentUpload(
  send: Send,
  doFetch: typeof fetch,
  baseUrl: string,
): (data: Uint8Array | Blob, mediaType: string, options?: UploadOptions) => Promise<AttachmentRef> {
  /** `POST /attachments` with the bytes. */
  async function uploadInline(data: Uint8Array, mediaType: string, signal?: AbortSignal): Promise<AttachmentRef> {
    const res = await send("POST", `${baseUrl}/attachments`, { bytes: { data, contentType: mediaType }, signal });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    return refOf(res.status, await readJson(res));
  }

  /** A direct upload: declare, post the form to blob storage, complete (the server checks the digest). */
  async function uploadDirect(data: Uint8Array, mediaType: string, signal?: AbortSignal): Promise<AttachmentRef | undefined> {
    const digest = `sha256:${await sha256Hex(data)}`;
    const declared = await send("POST", `${baseUrl}/attachments/uploads`, { body: { digest, mediaType, size: data.byteLength }, signal });
    if (declared.status === 501) {
      await declared.body?.cancel();
      return undefined; // no direct uploads here: the inline route takes every size
    }
    if (!declared.ok) throw await HarnessHttpError.fromResponse(declared);
    const upload = (await readJson(declared)) as { uploadId?: unknown; url?: unknown; fields?: unknown };
    if (typeof upload.uploadId !== "string" || typeof upload.url !== "string" || typeof upload.fields !== "object" || upload.fields === null) {
      throw new HarnessHttpError(declared.status, "unexpected_response", "upload answer lacks uploadId/url/fields");
    }
    const form = new FormData();
    for (const [name, value] of Object.entries(upload.fields as Record<string, string>)) form.append(name, value);
    form.append("file", new Blob([data as Uint8Array<ArrayBuffer>], { type: mediaType }));
    // Straight to blob storage: the presigned policy is the credential, no harness headers.
    const posted = await doFetch(upload.url, { method: "POST", body: form, signal });
    if (!posted.ok) {
      const detail = (await posted.text()).slice(0, 300);
      throw new HarnessHttpError(posted.status, "upload_failed", `direct upload to ${upload.url} failed (${posted.status}): ${detail}`);
    }
    await posted.body?.cancel();
    const done = await send("POST", `${baseUrl}/attachments/uploads/${encodeURIComponent(upload.uploadId)}/complete`, { signal });
    if (!done.ok) throw await HarnessHttpError.fromResponse(done);
    return refOf(done.status, await readJson(done));
  }

  return async (data, mediaType, opts = {}) => {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(await data.arrayBuffer());
    const inlineLimit = opts.inlineLimit ?? DEFAULT_INLINE_UPLOAD_BYTES;
    if (bytes.byteLength > inlineLimit) {
      const direct = await uploadDirect(bytes, mediaType, opts.signal);
      if (direct !== undefined) return direct;
    }
    return uploadInline(bytes, mediaType, opts.signal);
  };
}

/** The SHA-256 of `data`, lowercase hex (an attachment's digest is `sha256:` and this). */
export async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
