/**
 * `resolute-harness/client`: a typed client for the harness's HTTP surface: `fetch`,
 * `TextDecoder`, a small SSE parser and, for `AWS_IAM` endpoints, SigV4 signing (`aws4fetch`,
 * WebCrypto). For Node 22+ and browsers; it imports no server code, only types.
 */
export {
  createClient,
  type CancelAnswer,
  type CancelOptions,
  type ClientHeaders,
  type ClientOptions,
  type DispatchIds,
  type DispatchOptions,
  type HarnessClient,
  type InjectOptions,
  type ListSubmissionsOptions,
  type SettledResult,
  type StreamOptions,
  type WaitOptions,
} from "./client.ts";
export { childSessionOf, type ChildSession } from "./child-session.ts";
export { MessageView, type AssistantItem, type NoteItem, type SettledItem, type ToolItem, type UserItem, type ViewItem } from "./message-view.ts";
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
export type { AttemptView, SubmissionDetail, SubmissionPage, SubmissionSummary } from "../protocol/submission-view.ts";
export type { ErrorBody } from "../protocol/error-body.ts";
