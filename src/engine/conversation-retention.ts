/**
 * Expiring conversations by age (`conversationRetentionMs`, ADR 0034), embedded: a conversation
 * whose last record is older than the retention (its age is the time since its last activity:
 * a message, a reply, a tool's outcome; not its creation) is deleted like `DELETE …`
 * (`deleteSessionConversation`: records, checkpoint, submissions, subagents' conversations, the
 * blobs only it references). A subagent's conversation is skipped (it goes with its parent), and
 * so is one with an unsettled submission (a run waiting on a person for longer than the
 * retention stays until it settles and ages again).
 */
import { isHarnessError } from "../errors.ts";
import type { ConversationDeletionStore, ConversationStore, RetentionStore } from "../store/store.ts";
import { deleteSessionConversation } from "./conversation-deletion.ts";

const PAGE = 100;

export type RetentionSweepStore = ConversationDeletionStore & Required<RetentionStore> & Pick<ConversationStore, "readRecords">;

/** Deletes the conversations idle for `retentionMs` at `now`; answers how many. */
export async function expireIdleConversations(store: RetentionSweepStore, now: number, retentionMs: number): Promise<number> {
  let expired = 0;
  for (let after = ""; ; ) {
    const page = await store.listIdleConversations({ idleSince: now - retentionMs, after, limit: PAGE });
    for (const conversation of page) {
      const [created] = await store.readRecords(conversation.id, "", 1);
      if (created?.kind === "conversation_created" && created.payload.parentRef !== undefined) continue;
      try {
        if ((await deleteSessionConversation(store, conversation.key)).deleted) expired += 1;
      } catch (err) {
        if (!isHarnessError(err, "session_busy")) throw err;
      }
    }
    if (page.length < PAGE) return expired;
    after = page.at(-1)!.id;
  }
}

/** Least time between two retention sweeps on the sweep's timer (a manual sweep always runs one). */
export const RETENTION_SWEEP_EVERY_MS = 60_000;

/**
 * The runtime's retention step for `conversationRetentionMs` (undefined when it is off): checks
 * the setting and the store, and answers a function the sweep calls, which runs
 * {@link expireIdleConversations} when forced or a minute after its last run.
 */
export function retentionSweep(
  store: ConversationDeletionStore & RetentionStore & Pick<ConversationStore, "readRecords">,
  retentionMs: number | undefined,
  now: () => number,
): ((force: boolean) => Promise<number | undefined>) | undefined {
  if (retentionMs === undefined) return undefined;
  if (!Number.isSafeInteger(retentionMs) || retentionMs <= 0) throw new Error(`conversationRetentionMs must be a positive whole number of ms, got ${String(retentionMs)}`);
  if (typeof store.listIdleConversations !== "function") {
    throw new Error("conversationRetentionMs needs a store that lists idle conversations (listIdleConversations: the memory and SQLite stores, and the DynamoDB store created with idleSessions: true)");
  }
  const listing = store as RetentionSweepStore;
  let last = -Infinity;
  return async (force) => {
    const at = now();
    if (!force && at - last < RETENTION_SWEEP_EVERY_MS) return undefined;
    last = at;
    return expireIdleConversations(listing, at, retentionMs);
  };
}
