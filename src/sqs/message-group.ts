import { createHash } from "node:crypto";

/** SQS's limit on a FIFO message group id. */
export const MAX_GROUP_ID_LENGTH = 128;

/** Characters SQS accepts in a group id: alphanumerics and ASCII punctuation. */
const GROUP_ID_CHARS = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+$/;

/** Prefix of a hashed group id; `#` cannot occur in a session key string, so no clash. */
const HASHED_PREFIX = "h#";

/**
 * The FIFO message group of a session: its key string (`agent/instance/session`) when SQS
 * accepts it as is, else `h#` + the SHA-256 hex of it (66 characters). Hashing keeps one group
 * per session, which is all the ordering needs; the doorbell body still carries the full key.
 */
export function messageGroupId(group: string): string {
  if (group.length > 0 && group.length <= MAX_GROUP_ID_LENGTH && GROUP_ID_CHARS.test(group)) {
    return group;
  }
  return HASHED_PREFIX + createHash("sha256").update(group, "utf8").digest("hex");
}
