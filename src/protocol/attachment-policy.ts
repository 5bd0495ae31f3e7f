/**
 * Which attachments the harness accepts: media types and their size ceilings. Part of the wire
 * contract (the client may check early; the runtime checks every upload). Bytes are also checked
 * against their declared type (an image's signature, a PDF's header, text that decodes as UTF-8),
 * so a file named wrong is refused at upload, not at the model.
 */

/** Media type → largest accepted size in bytes. */
export type AttachmentPolicy = Readonly<Record<string, number>>;

const MiB = 1024 * 1024;

/**
 * The default policy. Images at 5 MiB (the smallest per-image ceiling of the providers pi-ai
 * speaks to: Anthropic's), text at 1 MiB (inlined into the context, so far more than a model
 * window holds anyway), PDFs at 32 MiB (Anthropic's request ceiling for documents).
 */
export const DEFAULT_ATTACHMENT_POLICY: AttachmentPolicy = Object.freeze({
  "image/png": 5 * MiB,
  "image/jpeg": 5 * MiB,
  "image/gif": 5 * MiB,
  "image/webp": 5 * MiB,
  "text/plain": 1 * MiB,
  "text/markdown": 1 * MiB,
  "text/csv": 1 * MiB,
  "application/json": 1 * MiB,
  "application/pdf": 32 * MiB,
});

/** How attachments reach the model: as an image, as text, or as a note naming them. */
export type AttachmentRendering = "image" | "text" | "note";

/** How an accepted media type is shown to the model (pi-ai has text and image content only). */
export function renderingOf(mediaType: string): AttachmentRendering {
  if (mediaType.startsWith("image/")) return "image";
  if (mediaType.startsWith("text/") || mediaType === "application/json") return "text";
  return "note";
}

/**
 * The media type of a `Content-Type` value: lower-cased, parameters dropped
 * (`"Text/Plain; charset=utf-8"` → `"text/plain"`). A charset other than UTF-8 is refused by
 * {@link attachmentProblem} (text is stored and shown as UTF-8).
 */
export function normalizeMediaType(contentType: string): { mediaType: string; charset?: string } {
  const [type = "", ...params] = contentType.split(";");
  const out: { mediaType: string; charset?: string } = { mediaType: type.trim().toLowerCase() };
  for (const param of params) {
    const [name, value] = param.split("=");
    if (name?.trim().toLowerCase() === "charset" && value !== undefined) out.charset = value.trim().replace(/^"|"$/g, "").toLowerCase();
  }
  return out;
}

/**
 * Why a declared upload (type and size, before any byte) is refused, or undefined. The message
 * names the allowed types, so a client learns what to send.
 */
export function declaredProblem(policy: AttachmentPolicy, mediaType: string, size: number): string | undefined {
  const limit = policy[mediaType];
  if (limit === undefined) {
    return `unsupported attachment type ${JSON.stringify(mediaType)}: allowed are ${Object.keys(policy).join(", ")}`;
  }
  if (!Number.isSafeInteger(size) || size <= 0) return "an attachment must not be empty";
  if (size > limit) return `${mediaType} attachment of ${size} bytes exceeds its limit of ${limit} bytes`;
  return undefined;
}

/** Why these bytes are not a valid attachment of `mediaType` under `policy`, or undefined. */
export function attachmentProblem(policy: AttachmentPolicy, mediaType: string, data: Uint8Array, charset?: string): string | undefined {
  const declared = declaredProblem(policy, mediaType, data.byteLength);
  if (declared !== undefined) return declared;
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    return `unsupported charset ${JSON.stringify(charset)}: text attachments must be UTF-8`;
  }
  return contentProblem(mediaType, data);
}

/** Why the bytes do not look like `mediaType`, or undefined (types without a check pass). */
export function contentProblem(mediaType: string, data: Uint8Array): string | undefined {
  const signature = SIGNATURES[mediaType];
  if (signature !== undefined && !signature(data)) return `the bytes are not ${describe(mediaType)} (declared ${mediaType})`;
  if (renderingOf(mediaType) === "text") {
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(data);
    } catch {
      return `${mediaType} attachment is not valid UTF-8`;
    }
  }
  return undefined;
}

const startsWith = (data: Uint8Array, bytes: readonly number[], at = 0) => bytes.every((b, i) => data[at + i] === b);
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/** Magic numbers of the binary types (the first bytes every such file begins with). */
const SIGNATURES: Record<string, (data: Uint8Array) => boolean> = {
  "image/png": (d) => startsWith(d, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  "image/jpeg": (d) => startsWith(d, [0xff, 0xd8, 0xff]),
  "image/gif": (d) => startsWith(d, ascii("GIF87a")) || startsWith(d, ascii("GIF89a")),
  "image/webp": (d) => startsWith(d, ascii("RIFF")) && startsWith(d, ascii("WEBP"), 8),
  "application/pdf": (d) => startsWith(d, ascii("%PDF-")),
};

function describe(mediaType: string): string {
  return mediaType === "application/pdf" ? "a PDF" : `a ${mediaType.slice(mediaType.indexOf("/") + 1).toUpperCase()} image`;
}

/** Checks a policy given in configuration (a plain `Error` naming the bad entry). */
export function checkAttachmentPolicy(policy: unknown): AttachmentPolicy {
  if (policy === null || typeof policy !== "object" || Array.isArray(policy)) throw new Error("attachment policy must be an object of media type → bytes");
  for (const [type, limit] of Object.entries(policy)) {
    if (!/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(type)) throw new Error(`attachment policy: invalid media type ${JSON.stringify(type)}`);
    if (!Number.isSafeInteger(limit) || (limit as number) <= 0) throw new Error(`attachment policy: limit of ${type} must be a positive integer`);
  }
  return Object.freeze({ ...(policy as Record<string, number>) });
}
