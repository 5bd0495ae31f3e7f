/**
 * Deleting a session's conversation with its subagents' conversations (ADR 0034): each child
 * session first (depth first, so an interrupted deletion is found again from the parent's
 * submissions, which go last), then the session itself through the store. With `cancel`, the
 * unsettled submissions of each session are cancelled first and awaited until settled;
 * without it a session with one is refused (`SessionBusy`, nothing deleted in it).
 */
import { SessionBusy } from "../errors.ts";
import type { ConversationDeletionStore } from "../store/store.ts";
import { type SessionKey, type Submission, sessionKeyString } from "../store/submission.ts";

/** What a deletion did. */
export interface ConversationDeletionReport {
  /** False when the session had no conversation left to delete (a repeated deletion). */
  deleted: boolean;
  /** The deleted conversation. */
  conversationId?: string;
  /** Subagent sessions deleted with it. */
  childSessions: number;
  /** Digests of the blobs deleted (those no other conversation references). */
  blobsDeleted: string[];
}

export interface ConversationDeletionOptions {
  /** Cancel unsettled submissions first (instead of `SessionBusy`). */
  cancel?: (sub: Submission) => Promise<void>;
  /** How long to wait for cancelled submissions to settle before giving up with `SessionBusy`. */
  settleTimeoutMs?: number;
  /** How often to look while waiting. */
  pollMs?: number;
}

const PAGE = 100;

export async function deleteSessionConversation(
  store: ConversationDeletionStore,
  key: SessionKey,
  options: ConversationDeletionOptions = {},
): Promise<ConversationDeletionReport> {
  const subs = await allSubmissions(store, key);
  if (options.cancel) await cancelAndSettle(store, key, subs, options);
  let childSessions = 0;
  const blobsDeleted: string[] = [];
  const children = new Map<string, SessionKey>();
  for (const sub of subs) {
    for (const child of await store.listChildSubmissions(sub.id)) children.set(sessionKeyString(child.sessionKey), child.sessionKey);
  }
  for (const child of children.values()) {
    const report = await deleteSessionConversation(store, child, options);
    childSessions += report.childSessions + (report.deleted ? 1 : 0);
    blobsDeleted.push(...report.blobsDeleted);
  }
  const own = await store.deleteConversation(key);
  blobsDeleted.push(...own.blobsDeleted);
  return { deleted: own.deleted, ...(own.conversationId !== undefined ? { conversationId: own.conversationId } : {}), childSessions, blobsDeleted };
}

/** Every submission of the session, newest first. */
async function allSubmissions(store: ConversationDeletionStore, key: SessionKey): Promise<Submission[]> {
  const all: Submission[] = [];
  for (;;) {
    const page = await store.listSessionSubmissions(key, { limit: PAGE, ...(all.length > 0 ? { before: all.at(-1)!.id } : {}) });
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}

async function cancelAndSettle(
  store: ConversationDeletionStore,
  key: SessionKey,
  subs: Submission[],
  options: ConversationDeletionOptions,
): Promise<void> {
  const unsettled = subs.filter((s) => s.status !== "settled");
  for (const sub of unsettled) await options.cancel!(sub);
  const deadline = Date.now() + (options.settleTimeoutMs ?? 30_000);
  for (const sub of unsettled) {
    for (;;) {
      const now = await store.getSubmission(sub.id);
      if (now.status === "settled") break;
      if (Date.now() > deadline) throw new SessionBusy(sessionKeyString(key));
      await new Promise((r) => setTimeout(r, options.pollMs ?? 100));
    }
  }
}
