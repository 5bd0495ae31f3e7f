/**
 * `resolute-harness/react`: `useConversation`, a harness session in a React component: its
 * messages (through `MessageView`), status, the calls waiting for a person's approval, and
 * `send`, `steer`, `followUp`, `cancel`, `compact`, `approve`, `deny`; on mount it reads the
 * conversation and resumes whatever is in flight. Needs `react` 18 or later (an optional peer
 * dependency). Create the client once (module scope or `useMemo`):
 * a new client starts a new conversation.
 *
 * @example
 * ```ts
 * import { createClient } from "resolute-harness/client";
 * import { useConversation } from "resolute-harness/react";
 *
 * const client = createClient({ baseUrl: "http://127.0.0.1:8484" });
 *
 * export function useDemo() {
 *   const { messages, status, send, cancel, pendingApprovals, approve, deny } = useConversation({ client, agent: "assistant", instance: "demo" });
 *   const lastReply = messages.findLast((m) => m.kind === "assistant")?.text ?? "";
 *   // Calls waiting for a person: show each (tool, args) with Approve / Deny.
 *   const waiting = pendingApprovals.map((call) => ({
 *     what: `${call.name} ${JSON.stringify(call.args)}`,
 *     approve: () => approve(call.approval.approvalId),
 *     deny: (reason: string) => deny(call.approval.approvalId, { reason }),
 *   }));
 *   return { lastReply, waiting, busy: status === "running", ask: (text: string) => send(text), stop: () => cancel() };
 * }
 * ```
 *
 * @module
 */
export { useConversation, type UseConversationOptions, type UseConversationResult } from "./use-conversation.ts";
export {
  LiveConversation,
  type LiveConversationOptions,
  type LiveConversationSnapshot,
  type LiveConversationStatus,
  type PendingApprovalItem,
} from "../client/live-conversation.ts";
export type { ViewItem, UserItem, AssistantItem, ToolItem, ToolApproval, NoteItem, SettledItem } from "../client/message-view.ts";
