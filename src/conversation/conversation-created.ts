import type { ParentRef, RecordDraft } from "../protocol/records.ts";

/**
 * The first record of every conversation. Admission writes it when it creates the
 * conversation; an attempt that finds the log empty writes it instead (the admission's append
 * failed and the dispatch was retried), so both must build the same record.
 */
export function conversationCreatedDraft(
  conversationId: string,
  key: { agent: string; instance: string; session: string },
  time: string,
  parentRef?: ParentRef,
): RecordDraft {
  return {
    kind: "conversation_created",
    conversationId,
    session: key.session,
    time,
    payload: { agent: key.agent, instance: key.instance, session: key.session, ...(parentRef ? { parentRef } : {}) },
  };
}
