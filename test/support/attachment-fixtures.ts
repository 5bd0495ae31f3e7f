/** Small real files for attachment tests, and the digest a client computes for them. */
import { createHash } from "node:crypto";

/** A 1×1 PNG (a real image: any decoder reads it). */
export const PNG_1x1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

/** A PNG of about `bytes` bytes: the 1×1 image's signature and chunks, padded with a private chunk's worth of bytes. */
export function pngOfSize(bytes: number, seed = 1): Buffer {
  const out = Buffer.alloc(Math.max(bytes, PNG_1x1.length));
  PNG_1x1.copy(out);
  for (let i = PNG_1x1.length; i < out.length; i++) out[i] = (i * 31 + seed * 7) & 0xff;
  return out;
}

/** `sha256:<hex>` of the bytes. */
export function digestOf(data: Uint8Array): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}
