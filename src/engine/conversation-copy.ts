/**
 * Copying records into a new conversation (a fork, an import, ADR 0034): the records are appended as drafts
 * in their order, so the store mints new ids; each record is re-addressed to the new
 * conversation and session, its `conversation_created` names the new address, and a
 * `compaction`'s `firstKeptEntryId` is mapped to the new id of its kept entry (appended before
 * it: a chunk ends before a compaction whose kept entry is still in it).
 */
import { newId } from "../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ConversationExists, isHarnessError } from "../errors.ts";
import type { ConversationStore } from "../store/store.ts";
import { type SessionKey, sessionKeyString } from "../store/submission.ts";

/** Records per append. */
const CHUNK = 100;

/**
 * Creates the conversation of `key` from copies of `records` (`ConversationExists` when the
 * session has one already: a copy, fork or import, never writes into existing history). The
 * copies are appended under the new conversation's id before the session holds it, and the
 * session is given that id last (`ensureConversation`): until then no dispatch, stream or other
 * copy sees the conversation, so none can write into it half made. A dispatch into the session
 * meanwhile creates the session's conversation itself, and the copy then answers
 * `ConversationExists` (its records stay unreferenced under an id nothing names, like those of a
 * copy that dies midway). Returns the new conversation's id and the new id of each copied record
 * by its old id.
 */
export async function copyIntoNewConversation(
  store: Pick<ConversationStore, "getConversation" | "ensureConversation" | "appendRecords">,
  key: SessionKey,
  records: readonly ConversationRecord[],
  now: number,
): Promise<{ conversationId: string; ids: Map<string, string> }> {
  if (await hasConversation(store, key)) throw new ConversationExists(sessionKeyString(key));
  const conversationId = newId(now);
  const ids = new Map<string, string>();
  let head = "";
  let chunk: ConversationRecord[] = [];
  const flush = async () => {
    if (chunk.length === 0) return;
    const drafts = chunk.map((record) => draftOf(record, conversationId, key, ids));
    const appended = await store.appendRecords(conversationId, drafts, { expectedHead: head, copied: true });
    chunk.forEach((record, i) => ids.set(record.id, appended[i]!.id));
    head = appended.at(-1)!.id;
    chunk = [];
  };
  for (const record of records) {
    const kept = record.kind === "compaction" ? record.payload.firstKeptEntryId : undefined;
    if (chunk.length >= CHUNK || (kept !== undefined && chunk.some((r) => r.id === kept))) await flush();
    chunk.push(record);
  }
  await flush();
  const { created } = await store.ensureConversation({ id: conversationId, key, createdAt: now });
  if (!created) throw new ConversationExists(sessionKeyString(key));
  return { conversationId, ids };
}

/** Whether the session has a conversation (`ConversationNotFound` read as no). */
export async function hasConversation(store: Pick<ConversationStore, "getConversation">, key: SessionKey): Promise<boolean> {
  try {
    await store.getConversation(key);
    return true;
  } catch (err) {
    if (isHarnessError(err, "conversation_not_found")) return false;
    throw err;
  }
}

function draftOf(record: ConversationRecord, conversationId: string, key: SessionKey, ids: ReadonlyMap<string, string>): RecordDraft {
  const { id: _id, ...rest } = record;
  const draft = { ...rest, conversationId, session: key.session } as RecordDraft;
  if (draft.kind === "conversation_created") draft.payload = { agent: key.agent, instance: key.instance, session: key.session };
  if (draft.kind === "compaction" && draft.payload.firstKeptEntryId !== undefined) {
    draft.payload = { ...draft.payload, firstKeptEntryId: ids.get(draft.payload.firstKeptEntryId) ?? draft.payload.firstKeptEntryId };
  }
  return draft;
}
