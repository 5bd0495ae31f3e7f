import type { DispatchMessage } from "../protocol/dispatch.ts";
import type { ConversationRecord } from "../protocol/records.ts";

/**
 * The digests of the attachments `records` reference (their `user_message` attachments): the
 * blobs a conversation owns, unless another conversation references them too (ADR 0034).
 */
export function attachmentDigests(records: Iterable<ConversationRecord>, into = new Set<string>()): Set<string> {
  for (const record of records) {
    if (record.kind !== "user_message") continue;
    for (const ref of record.payload.attachments ?? []) into.add(ref.digest);
  }
  return into;
}

/** The digests a submission's input references (before, or without, its `user_message` record). */
export function inputDigests(input: DispatchMessage, into = new Set<string>()): Set<string> {
  for (const ref of input.attachments ?? []) into.add(ref.digest);
  return into;
}
