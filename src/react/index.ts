/**
 * `resolute-harness/react`: `useConversation`, a harness session in a React component. Needs
 * `react` 18 or later (an optional peer dependency).
 */
export { useConversation, type UseConversationOptions, type UseConversationResult } from "./use-conversation.ts";
export { Conversation, type ConversationOptions, type ConversationSnapshot, type ConversationStatus } from "../client/conversation.ts";
export type { ViewItem, UserItem, AssistantItem, ToolItem, NoteItem, SettledItem } from "../client/message-view.ts";
