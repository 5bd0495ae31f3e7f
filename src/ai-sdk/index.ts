/**
 * `resolute-harness/ai-sdk`: the harness behind the AI SDK's `useChat`. A `ChatTransport` that
 * dispatches, streams a submission's reply as UI message parts, resumes by record ids after a
 * reload and cancels on `stop()`; calls waiting for a person's approval as the AI SDK's approval
 * states, decided with `approve` / `deny`; the conversation's history as UI messages. Needs `ai` 7 (an
 * optional peer dependency); runs in browsers and Node.
 *
 * @example
 * ```ts
 * import { Chat } from "@ai-sdk/react"; // in a component: useChat({ id, transport, messages, resume: true })
 * import { HarnessChatTransport, type HarnessUIMessage } from "resolute-harness/ai-sdk";
 * import { createClient } from "resolute-harness/client";
 *
 * const client = createClient({ baseUrl: "http://127.0.0.1:8484" });
 * const transport = new HarnessChatTransport({ client, agent: "assistant", instance: "demo" });
 * // A chat is a session: its history comes from the harness's log, the reply in flight resumes.
 * const messages = await transport.loadMessages("default");
 * const chat = new Chat<HarnessUIMessage>({ id: "default", transport, messages });
 * await chat.sendMessage({ text: "what time is it?" });
 * console.log(chat.messages.at(-1)?.parts);
 * // A call waiting for a person is a tool part in `approval-requested` with a `data-approval`
 * // part beside it; the decision goes to the harness, and the reply streams on.
 * for (const part of chat.messages.at(-1)?.parts ?? []) {
 *   if (part.type === "data-approval" && part.data.state === "pending") await transport.approve("default", part.data.approvalId);
 * }
 * ```
 *
 * @module
 */
export { HarnessChatTransport, type HarnessChatTransportOptions } from "./chat-transport.ts";
export { uiMessagesOf, userMessageOf } from "./history.ts";
export { SubmissionChunker, type SubmissionChunkerOptions } from "./submission-chunker.ts";
export {
  assistantMessageId,
  type HarnessApprovalData,
  type HarnessDataParts,
  type HarnessMessageMetadata,
  type HarnessSettlementData,
  type HarnessToolOutput,
  type HarnessUIMessage,
  type HarnessUIMessageChunk,
} from "./ui-message.ts";
