/**
 * Callback ids (ADR 0025): unguessable, single-use ids a deferred tool's call hands out. Only
 * their digest is ever stored or recorded, so reading the log or the table does not let anyone
 * answer a callback.
 */
import { createHash, randomBytes } from "node:crypto";

/** A callback id's length in random bytes (192 bits; base64url: 32 characters). */
const CALLBACK_ID_BYTES = 24;

/** A fresh callback id: 192 random bits, base64url. */
export function newCallbackId(): string {
  return randomBytes(CALLBACK_ID_BYTES).toString("base64url");
}

/** sha256 (hex) of a callback id: what the store and the log keep instead of the id. */
export function callbackDigest(callbackId: string): string {
  return createHash("sha256").update(callbackId).digest("hex");
}

/** The route a callback is answered on, relative to the harness's base URL. */
export function callbackPath(callbackId: string): string {
  return `/callbacks/${callbackId}`;
}
