import { createHash, randomUUID } from "node:crypto";

/** SQS's limit on a FIFO message group id. */
export const MAX_GROUP_ID_LENGTH = 128;

/** Characters SQS accepts in a group id: alphanumerics and ASCII punctuation. */
const GROUP_ID_CHARS = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+$/;

/** Prefix of a hashed group id; `#` cannot occur in a session key string, so no clash. */
const HASHED_PREFIX = "h#";

/** Separates a doorbell's session part from its own part (`~` + 32 hex digits). */
const RING_SEPARATOR = "~";
const RING_SUFFIX_LENGTH = 1 + 32;

/**
 * A valid FIFO message group id naming a session: its key string (`agent/instance/session`) when
 * SQS accepts it as is, else `h#` + the SHA-256 hex of it (66 characters). `room` leaves that many
 * characters free after it (for {@link doorbellGroupId}'s suffix).
 */
export function messageGroupId(group: string, room = 0): string {
  if (group.length > 0 && group.length <= MAX_GROUP_ID_LENGTH - room && GROUP_ID_CHARS.test(group)) {
    return group;
  }
  return HASHED_PREFIX + createHash("sha256").update(group, "utf8").digest("hex");
}

/**
 * The message group of one doorbell: its session's group id plus a part of its own
 * (`<session>~<32 hex>`), so every doorbell is its own group (ADR 0028). A FIFO group is blocked
 * while any of its messages is in flight, and a message whose invocation died before its handler
 * ran (an init failure, a crash of the runtime) stays in flight for the queue's whole visibility
 * timeout (at least the worker's timeout, 15 minutes by default): in a group per session that
 * would hold every later doorbell of the session, the sweep's re-ring included. The store, not
 * the group, keeps a session's order (only its head may be claimed, ADR 0001). The session part
 * is there for people reading the queue.
 */
export function doorbellGroupId(group: string, nonce: string = randomUUID()): string {
  const own = nonce.replaceAll("-", "").slice(0, RING_SUFFIX_LENGTH - 1).padEnd(RING_SUFFIX_LENGTH - 1, "0");
  return `${messageGroupId(group, RING_SUFFIX_LENGTH)}${RING_SEPARATOR}${own}`;
}
