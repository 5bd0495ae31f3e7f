/**
 * `resolute-harness/client`: a typed client for the harness's HTTP surface, for Node 22+ and
 * browsers. It imports no server code (only the wire contract's types): `fetch`, `TextDecoder`, a
 * small SSE parser and, for `AWS_IAM` endpoints, SigV4 signing (`aws4fetch`, WebCrypto). Refusals
 * are `HarnessHttpError`s with the server's `code`.
 *
 * @example
 * ```ts
 * import { createClient, MessageView } from "resolute-harness/client";
 *
 * const client = createClient({ baseUrl: "http://127.0.0.1:8484" });
 * const { submissionId } = await client.dispatch("assistant", "demo", { kind: "user", body: "hello" });
 * const view = new MessageView();
 * for await (const record of client.stream("assistant", "demo")) view.apply(record);
 * console.log(submissionId, view.items);
 * ```
 *
 * @module
 */
export {
  clientFrom,
  createClient,
  type ClientSource,
  type CancelOptions,
  type ClientHeaders,
  type ClientOptions,
  type ClientToken,
  type DispatchOptions,
  type HarnessClient,
  type InjectOptions,
  type ListSubmissionsOptions,
} from "./client.ts";
export type { CancelAnswer, DispatchIds, SettledResult } from "./answers.ts";
export { DEFAULT_INLINE_UPLOAD_BYTES, type UploadOptions } from "./attachment-upload.ts";
export type { StreamOptions, WaitOptions } from "./record-stream.ts";
export type { AgentName, AgentResult, AnyAgents, DispatchResult } from "./agent-types.ts";
export { childSessionOf, type ChildSession } from "./child-session.ts";
export type { ApprovalMethods, DecisionOptions, PendingApprovalsOptions } from "./approvals.ts";
export { AttachmentDigestMismatch, type ConversationTransferMethods, type ExportOptions, type ImportOptions } from "./conversation-transfer.ts";
export type * from "../protocol/conversation-export.ts";
export type { ApprovalDecision, CallbackAnswer, CallbackResolution, PendingApproval } from "../protocol/approvals.ts";
export {
  LiveConversation,
  type LiveConversationOptions,
  type LiveConversationSnapshot,
  type LiveConversationStatus,
  type PendingApprovalItem,
} from "./live-conversation.ts";
export {
  MessageView,
  type AssistantItem,
  type NoteItem,
  type RetryState,
  type SettledItem,
  type ToolApproval,
  type ToolItem,
  type UserItem,
  type ViewItem,
} from "./message-view.ts";
export { HarnessHttpError, type HarnessHttpErrorCode } from "./http-error.ts";
export {
  sigv4Signer,
  type AwsCredentials,
  type AwsCredentialsProvider,
  type RequestSigner,
  type SignableRequest,
  type SigV4Options,
} from "./sigv4.ts";
export { SseParser, type SseEvent, type SseHandlers } from "./sse-parser.ts";
// The wire contract: every record kind and payload, dispatch messages, views, error bodies.
export type * from "../protocol/records.ts";
export type { DispatchMessage, SignalMeta } from "../protocol/dispatch.ts";
export type { SubmissionStatus } from "../protocol/submission-view.ts";
export type {
  ActivityListPage,
  ActivityRequest,
  ActivityState,
  ActivitySummary,
  AttemptView,
  SubmissionDetail,
  SubmissionPage,
  SubmissionRetryView,
  SubmissionSummary,
} from "../protocol/submission-view.ts";
export type { ErrorBody } from "../protocol/error-body.ts";
