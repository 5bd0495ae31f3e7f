import { useEffect, useMemo, useRef, useSyncExternalStore } from "react";
import { createClient, type ClientToken } from "../client/client.ts";
import { LiveConversation, type LiveConversationOptions, type LiveConversationSnapshot } from "../client/live-conversation.ts";

/**
 * What {@link useConversation} needs: which session, through which client: a `client`, or a
 * `baseUrl` and `token` (a string, or a function asked before every request and stream reconnect;
 * the latest one passed is used, so an inline function does not restart the conversation).
 */
export type UseConversationOptions = LiveConversationOptions;

/** What {@link useConversation} returns: the snapshot and the session's actions. */
export interface UseConversationResult extends LiveConversationSnapshot {
  /** Dispatches a user message. */
  send: LiveConversation["send"];
  /** Steers the run in flight. */
  steer: LiveConversation["steer"];
  /** A message for when the run in flight would stop. */
  followUp: LiveConversation["followUp"];
  /** Cancels the submission in flight. */
  cancel: LiveConversation["cancel"];
  /** Admits a manual compaction. */
  compact: LiveConversation["compact"];
  /** Approves a call of `pendingApprovals` by its `approval.approvalId`: it runs once and the run goes on. */
  approve: LiveConversation["approve"];
  /** Denies a call of `pendingApprovals` by its `approval.approvalId`: nothing runs, the model reads why. */
  deny: LiveConversation["deny"];
}

/**
 * A harness session in a React component: its messages (through `MessageView`: superseded
 * attempts dropped), status and error, the tool calls waiting for a person's approval
 * (`pendingApprovals`), and `send`, `steer`, `followUp`, `cancel`, `compact`, `approve`, `deny`.
 * On mount it reads the conversation from its start and follows whatever is in flight, so a
 * reload mid-reply carries on where the reply is, each record shown once. A new
 * `agent`/`instance`/`session` (or `client`) starts a new conversation.
 *
 *   const { messages, status, send, cancel } = useConversation({ client, agent: "assistant", instance: "demo" });
 */
export function useConversation(options: UseConversationOptions): UseConversationResult {
  const { agent, instance, session } = options;
  // A token changes without a new client: the client asks the latest one each time.
  const token = useRef<ClientToken | undefined>(options.token);
  token.current = options.token;
  const own = useMemo(
    () =>
      options.baseUrl === undefined
        ? undefined
        : createClient({
            baseUrl: options.baseUrl,
            token: (context) => {
              const current = token.current;
              return typeof current === "function" ? current(context) : (current ?? "");
            },
          }),
    [options.baseUrl],
  );
  const client = options.client ?? own;
  const conversation = useMemo(() => new LiveConversation({ client: client!, agent, instance, session }), [client, agent, instance, session]);
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
    approve: conversation.approve,
    deny: conversation.deny,
  };
}
