/**
 * Deleting a session's conversation with its subagents' conversations (ADR 0034, ADR 0041), in
 * two passes so that a refused deletion changes nothing:
 * 1. Top down, each session is marked as being deleted (`reserveDeletion`: refused while it has an
 *    unsettled submission; from then on admission to it is refused), and only then are its
 *    children listed (nothing new can arrive in it once marked). A refusal anywhere clears the
 *    marks this call set and deletes nothing.
 * 2. Bottom up, each session is deleted, children before their parent, so an interrupted deletion
 *    is found again from the parent's submissions, which go last.
 * With `cancel`, the unsettled submissions of each session are cancelled first and awaited until
 * settled; without it a session with one is refused (`SessionBusy`).
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
  const tree: SessionKey[] = [];
  const marked: SessionKey[] = [];
  try {
    await reserveTree(store, key, options, tree, marked);
  } catch (err) {
    // Refused (or failed) before anything was deleted: leave every session as it was.
    for (const session of marked.reverse()) await store.releaseDeletion(session);
    throw err;
  }
  let childSessions = 0;
  const blobsDeleted: string[] = [];
  let own: Awaited<ReturnType<ConversationDeletionStore["deleteConversation"]>> | undefined;
  // Parents were reached before their children: the reverse deletes every child before its parent.
  for (const session of tree.reverse()) {
    const report = await store.deleteConversation(session);
    blobsDeleted.push(...report.blobsDeleted);
    if (session === key) own = report;
    else if (report.deleted) childSessions += 1;
  }
  return { deleted: own!.deleted, ...(own!.conversationId !== undefined ? { conversationId: own!.conversationId } : {}), childSessions, blobsDeleted };
}

/**
 * Marks `key` and then, listed once it is marked, its subagents' sessions (depth first), adding
 * each to `tree` (parents first) and those this call marked to `marked`.
 */
async function reserveTree(
  store: ConversationDeletionStore,
  key: SessionKey,
  options: ConversationDeletionOptions,
  tree: SessionKey[],
  marked: SessionKey[],
): Promise<void> {
  if (tree.some((k) => sessionKeyString(k) === sessionKeyString(key))) return;
  if (options.cancel) await cancelAndSettle(store, key, await allSubmissions(store, key), options);
  if (await store.reserveDeletion(key)) marked.push(key);
  tree.push(key);
  const children = new Map<string, SessionKey>();
  for (const sub of await allSubmissions(store, key)) {
    for (const child of await store.listChildSubmissions(sub.id)) children.set(sessionKeyString(child.sessionKey), child.sessionKey);
  }
  for (const child of children.values()) await reserveTree(store, child, options, tree, marked);
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
