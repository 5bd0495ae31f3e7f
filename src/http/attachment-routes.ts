import type { Hono } from "hono";
import type { AppEnv } from "./caller.ts";
import { bodyLimit } from "hono/body-limit";
import { isHarnessError } from "../errors.ts";
import { errorResponse, RequestError } from "./http-errors.ts";
import { readJsonObject } from "./request-body.ts";

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * The attachment routes (ADR 0034), behind the same middleware as `/agents`:
 *
 * - `POST /attachments`: the raw bytes as the body, their media type as `Content-Type` →
 *   201 `{digest, mediaType, size}` (content-addressed: the same bytes again give the same answer
 *   and are stored once). A type the policy does not allow, a size over its type's limit or bytes
 *   that are not what the type says → 400 `invalid_attachment` naming the problem; a body over
 *   `maxUploadBytes` → 413 (use a direct upload).
 * - `GET /attachments/limits` → `{types: {<mediaType>: maxBytes}, maxUploadBytes, directUploads}`.
 * - `POST /attachments/uploads` `{digest, mediaType, size}` → 201 `{uploadId, url, fields,
 *   expiresAt}`: POST `fields` then the file (as `file`) to `url` as multipart/form-data, then
 * - `POST /attachments/uploads/:uploadId/complete` → 200 `{digest, mediaType, size}` once the bytes
 *   match their digest; only then may a dispatch reference it. 501 `uploads_unsupported` where the
 *   blob storage takes no direct uploads (the embedded shape: `POST /attachments` takes every size).
 * - `GET /attachments/:digest[?agent=&instance=[&session=]]` → the bytes, with their media type: to
 *   their uploader, or (with the query) through a conversation the caller may read that references
 *   them (ADR 0046); 403 `forbidden` otherwise, before anything is read.
 */
export function mountAttachmentRoutes(app: Hono<AppEnv>, maxUploadBytes: number): void {
  app.get("/attachments/limits", (c) => {
    const { policy, directUploads } = c.var.caller.attachmentLimits();
    return c.json({ types: policy, maxUploadBytes, directUploads });
  });

  app.post(
    "/attachments",
    bodyLimit({
      maxSize: maxUploadBytes,
      onError: (c) =>
        errorResponse(c, 413, {
          error: `attachment exceeds the ${maxUploadBytes} bytes POST /attachments takes${c.var.caller.attachmentLimits().directUploads ? ": upload it with POST /attachments/uploads" : ""}`,
          code: "payload_too_large",
        }),
    }),
    async (c) => {
      const contentType = c.req.header("content-type") ?? "";
      if (contentType === "") throw new RequestError(400, "invalid_request", "Content-Type is required: the attachment's media type");
      const data = new Uint8Array(await c.req.arrayBuffer());
      const ref = await c.var.caller.uploadAttachment({ contentType, data });
      return c.json(ref, 201);
    },
  );

  app.post("/attachments/uploads", async (c) => {
    const json = await readJsonObject(c);
    const { digest, mediaType, size } = json;
    if (typeof digest !== "string") throw new RequestError(400, "invalid_request", "digest must be a string");
    if (typeof mediaType !== "string") throw new RequestError(400, "invalid_request", "mediaType must be a string");
    if (typeof size !== "number") throw new RequestError(400, "invalid_request", "size must be a number");
    return c.json(await c.var.caller.createAttachmentUpload({ digest, mediaType, size }), 201);
  });

  app.post("/attachments/uploads/:uploadId/complete", async (c) => {
    return c.json(await c.var.caller.completeAttachmentUpload(c.req.param("uploadId")), 200);
  });

  app.get("/attachments/:digest", async (c) => {
    const digest = c.req.param("digest");
    if (!DIGEST.test(digest)) throw new RequestError(400, "invalid_request", `invalid digest ${JSON.stringify(digest)}: expected "sha256:<64 hex>"`);
    const via = viaConversation(c.req.query("agent"), c.req.query("instance"), c.req.query("session"));
    let found;
    try {
      found = await c.var.caller.attachment(digest, via);
    } catch (err) {
      if (isHarnessError(err, "attachment_not_found")) return errorResponse(c, 404, { error: err.message, code: "attachment_not_found" });
      throw err;
    }
    const { ref, data } = found;
    return c.body(data as Uint8Array<ArrayBuffer>, 200, {
      "Content-Type": ref.mediaType,
      // Served from the API's origin: never sniffed into something else, never run.
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy": "default-src 'none'; sandbox",
      "Cache-Control": "private, max-age=31536000, immutable",
    });
  });
}

/** The conversation a read names (`?agent=&instance=[&session=]`), or none; half a name is a 400. */
function viaConversation(agent: string | undefined, instance: string | undefined, session: string | undefined): { agent: string; instance: string; session?: string } | undefined {
  if (agent === undefined && instance === undefined && session === undefined) return undefined;
  if (agent === undefined || instance === undefined) {
    throw new RequestError(400, "invalid_request", "a conversation is named by agent and instance (and optionally session): both are required");
  }
  return session === undefined ? { agent, instance } : { agent, instance, session };
}
