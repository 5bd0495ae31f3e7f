import { useEffect, useMemo, useSyncExternalStore } from "react";
import { Conversation, type ConversationOptions, type ConversationSnapshot } from "../client/conversation.ts";

/** What {@link useConversation} needs: which session, through which client. */
export type UseConversationOptions = ConversationOptions;

/** What {@link useConversation} returns: the snapshot and the session's actions. */
export interface UseConversationResult extends ConversationSnapshot {
  /** Dispatches a user message. */
  send: Conversation["send"];
  /** Steers the run in flight. */
  steer: Conversation["steer"];
  /** A message for when the run in flight would stop. */
  followUp: Conversation["followUp"];
  /** Cancels the submission in flight. */
  cancel: Conversation["cancel"];
  /** Admits a manual compaction. */
  compact: Conversation["compact"];
}

/**
 * A harness session in a React component: its messages (through `MessageView`: superseded
 * attempts dropped), status and error, and `send`, `steer`, `followUp`, `cancel`, `compact`.
 * On mount it reads the conversation from its start and follows whatever is in flight, so a
 * reload mid-reply carries on where the reply is, each record shown once. A new
 * `agent`/`instance`/`session` (or `client`) starts a new conversation.
 *
 *   const { messages, status, send, cancel } = useConversation({ client, agent: "assistant", instance: "demo" });
 */
export function useConversation(options: UseConversationOptions): UseConversationResult {
  const { client, agent, instance, session } = options;
  const conversation = useMemo(() => new Conversation({ client, agent, instance, session }), [client, agent, instance, session]);
  useEffect(() => {
    conversation.start();
    return conversation.stop;
  }, [conversation]);
  const snapshot = useSyncExternalStore(conversation.subscribe, conversation.getSnapshot, conversation.getSnapshot);
  return {
    ...snapshot,
    send: conversation.send,
    steer: conversation.steer,
    followUp: conversation.followUp,
    cancel: conversation.cancel,
    compact: conversation.compact,
  };
}
