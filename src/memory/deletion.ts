import { SessionBusy } from "../errors.ts";
import { attachmentDigests, inputDigests } from "../conversation/attachment-digests.ts";
import type { ConversationDeletion } from "../store/store.ts";
import { type SessionKey, sessionKeyString } from "../store/submission.ts";
import type { MemoryState } from "./memory-state.ts";
import { sessionId } from "./rows.ts";

/**
 * The memory store's deletion of a settled conversation: its submissions, their bookkeeping, its
 * log, and the attachments nothing else references, over the shared {@link MemoryState}.
 */
export class MemoryDeletion {
  readonly #s: MemoryState;

  constructor(state: MemoryState) {
    this.#s = state;
  }

  async reserveDeletion(key: SessionKey): Promise<boolean> {
    const session = sessionId(key);
    this.#refuseUnsettled(key);
    if (!this.#s.log.find(key) || this.#s.deleting.has(session)) return false;
    this.#s.deleting.add(session);
    return true;
  }

  async releaseDeletion(key: SessionKey): Promise<void> {
    this.#s.deleting.delete(sessionId(key));
  }

  async deleteConversation(key: SessionKey): Promise<ConversationDeletion> {
    const session = sessionId(key);
    this.#refuseUnsettled(key);
    const conversation = this.#s.log.find(key);
    this.#s.deleting.delete(session);
    if (!conversation) return { deleted: false, blobsDeleted: [] };
    const rows = this.#s.history.get(session) ?? [];
    const digests = attachmentDigests(this.#s.log.read(conversation.id));
    for (const row of rows) inputDigests(row.sub.input, digests);
    for (const row of rows) {
      this.#s.rows.delete(row.sub.id);
      this.#s.byStatus.get(row.sub.status)!.delete(row);
      this.#s.attempts.delete(row.sub.id);
      this.#s.callWaits.forget(row.sub.id);
      this.#s.children.delete(row.sub.id);
      const parent = row.sub.parentSubmissionId;
      const siblings = parent === undefined ? undefined : this.#s.children.get(parent);
      if (siblings) this.#s.children.set(parent!, siblings.filter((r) => r !== row));
    }
    this.#s.history.delete(session);
    this.#s.sessions.delete(session);
    this.#s.log.delete(key, conversation.id);
    const blobsDeleted = [...digests].filter((digest) => !this.#referenced(digest));
    for (const digest of blobsDeleted) this.#s.attachments.delete(digest);
    return { deleted: true, conversationId: conversation.id, blobsDeleted };
  }

  /** `SessionBusy` while a submission of the session is unsettled, queued or not (a delayed message waits outside the order). */
  #refuseUnsettled(key: SessionKey): void {
    if ((this.#s.history.get(sessionId(key)) ?? []).some((row) => row.sub.status !== "settled")) throw new SessionBusy(sessionKeyString(key));
  }

  /** Whether a record or a submission's input still references `digest`. */
  #referenced(digest: string): boolean {
    if (this.#s.log.references(digest)) return true;
    for (const row of this.#s.rows.values()) if (inputDigests(row.sub.input).has(digest)) return true;
    return false;
  }
}

