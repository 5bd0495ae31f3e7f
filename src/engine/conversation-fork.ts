/**
 * Forking a conversation (edit and retry, ADR 0034): a new session whose history is the source's
 * log up to a record (streaming deltas left out: the completed messages hold their text), copied
 * into a conversation of its own, so its active path is the source's active path up to there. The store shares nothing between conversations, so the
 * records are copied, with new ids; attachments are shared by digest (content-addressed).
 */
import { isStreamingDelta } from "../conversation/checkpoint.ts";
import type { ConversationRecord } from "../protocol/records.ts";
import { InvalidRequest } from "../errors.ts";
import type { ConversationStore } from "../store/store.ts";
import type { SessionKey } from "../store/submission.ts";
import { copyIntoNewConversation } from "./conversation-copy.ts";

/** Records read per page while looking for the fork point. */
const PAGE = 500;

/** What a fork created. */
export interface ForkResult {
  conversationId: string;
  /** The records copied (the new conversation's history before any new message). */
  records: number;
}

export async function forkConversation(
  store: Pick<ConversationStore, "getConversation" | "readRecords" | "ensureConversation" | "appendRecords">,
  source: SessionKey,
  fromRecordId: string,
  target: SessionKey,
  now: number,
): Promise<ForkResult> {
  const conversation = await store.getConversation(source);
  const upTo: ConversationRecord[] = [];
  let found = false;
  for (let after = ""; !found; ) {
    const page = await store.readRecords(conversation.id, after, PAGE);
    for (const record of page) {
      upTo.push(record);
      if (record.id === fromRecordId) {
        found = true;
        break;
      }
    }
    if (page.length < PAGE) break;
    after = page.at(-1)!.id;
  }
  if (!found) throw new InvalidRequest(`fromRecordId ${JSON.stringify(fromRecordId)} is not a record of the conversation`);
  // The log up to the record, in log order (so a compaction re-roots the copy as it did the
  // source, and the copy's active path is the source's up to the record).
  const path = upTo.filter((r) => !isStreamingDelta(r));
  const { conversationId } = await copyIntoNewConversation(store, target, path, now);
  return { conversationId, records: path.length };
}
