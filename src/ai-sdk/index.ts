/**
 * `resolute-harness/ai-sdk`: the harness behind the AI SDK's `useChat`. A `ChatTransport` that
 * dispatches, streams a submission's reply as UI message parts, resumes by record ids after a
 * reload and cancels on `stop()`; the conversation's history as UI messages. Needs `ai` (an
 * optional peer dependency); runs in browsers and Node.
 */
export { HarnessChatTransport, type HarnessChatTransportOptions } from "./chat-transport.ts";
export { uiMessagesOf, userMessageOf } from "./history.ts";
export { SubmissionChunker, type SubmissionChunkerOptions } from "./submission-chunker.ts";
export {
  assistantMessageId,
  type HarnessDataParts,
  type HarnessMessageMetadata,
  type HarnessSettlementData,
  type HarnessToolOutput,
  type HarnessUIMessage,
  type HarnessUIMessageChunk,
} from "./ui-message.ts";
