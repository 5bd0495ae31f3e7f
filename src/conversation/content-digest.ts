import { createHash } from "node:crypto";

/**
 * `sha256:<hex>` over the raw bytes: the digest of an `AttachmentRef`, and the key of any
 * content-addressed blob (identical bytes, identical digest, in every store).
 */
export function contentDigest(data: Uint8Array | string): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}
