import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost, NoRunInFlight } from "../errors.ts";
import type { InboxDrain } from "../store/store.ts";
import { type InboxMessage, type SessionKey, isRunInFlight, sessionKeyString } from "../store/submission.ts";
import type { MemoryState } from "./memory-state.ts";
import { sessionId } from "./rows.ts";

/** The memory store's inbox: steer / follow-up messages held on the running head's row until drained. */
export class MemoryInbox {
  readonly #s: MemoryState;

  constructor(state: MemoryState) {
    this.#s = state;
  }

  async enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    const head = this.#s.sessions.get(sessionId(key))?.[0];
    if (!head || !isRunInFlight(head.sub)) throw new NoRunInFlight(sessionKeyString(key));
    head.inbox.push({ kind: message.kind, body: message.body, ...principalOf(message) });
    return { submissionId: head.sub.id };
  }

  async drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    const fence = { submissionId: request.submissionId, attemptId: request.attemptId };
    const row = this.#s.rows.get(request.submissionId);
    if (!row) throw new ClaimLost(`drain: unknown submission ${request.submissionId}`);
    // The common case (every turn boundary): nothing waiting. Still fenced like an append.
    if (row.inbox.length === 0) return this.#s.log.append(row.sub.conversationId, [], { fence, expectedHead: request.expectedHead });
    const wanted = new Set(request.kinds);
    const picked = row.inbox.filter((m) => wanted.has(m.kind));
    const sub = row.sub;
    const time = new Date(this.#s.clock.now()).toISOString();
    const drafts: RecordDraft[] = picked.map((m) => ({
      kind: "user_message",
      conversationId: sub.conversationId,
      session: sub.sessionKey.session,
      submissionId: sub.id,
      attemptId: request.attemptId,
      time,
      payload: { body: m.body, origin: m.kind, ...principalOf(m) },
    }));
    // #append checks the fence and head before writing anything; only then mark delivered.
    const records = this.#s.log.append(sub.conversationId, drafts, { fence, expectedHead: request.expectedHead });
    if (picked.length > 0) row.inbox = row.inbox.filter((m) => !wanted.has(m.kind));
    return records;
  }
}

/** The message's principal, as the record's `principalId` (absent when it has none). */
function principalOf(message: InboxMessage): { principalId?: string } {
  return message.principalId === undefined ? {} : { principalId: message.principalId };
}
